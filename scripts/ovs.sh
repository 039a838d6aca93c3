#!/usr/bin/env bash
# Build Open vSwitch 3.1 (Debian's openvswitch-source) with ovs-patches/ applied.
#
#   scripts/ovs.sh [build]     patch, configure (once) and build; install into
#                              $BUILD/ovs-install (bin/, sbin/, share/openvswitch)
#   scripts/ovs.sh prepare     only the patched source tree $BUILD/ovs-src
#   scripts/ovs.sh check [TESTSUITEFLAGS...]
#                              build, then OVS's own testsuite with those flags
#                              (default: the keyword 'flowcell')
#   scripts/ovs.sh devtree DIR a git repository in DIR: the pristine source as
#                              one commit, then one commit per patch (git am)
#   scripts/ovs.sh export DIR  the commits of DIR after the first back into
#                              ovs-patches/ (git format-patch) and its series
#
# Layout under $BUILD (the same build cache as the kernel's):
#   ovs-pristine/   the unpacked tarball, never modified
#   ovs-src/        pristine + ovs-patches/series; rewritten only where the
#                   result differs, so make rebuilds only what a patch touched
#   ovs/            the objects (a VPATH build, compiled through ccache)
#   ovs-install/    make install: --prefix for the binaries and the schema;
#                   the state directories are the standard ones
#                   (--localstatedir=/var, --sysconfdir=/etc), writable in
#                   the guest, and every daemon also honours OVS_RUNDIR,
#                   OVS_DBDIR, OVS_LOGDIR, OVS_SYSCONFDIR.
# No DPDK, no shared libraries.  An unchanged tree rebuilds in seconds.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
TARBALL=${OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
PATCHES=$ROOT/ovs-patches
PRISTINE=$BUILD/ovs-pristine
SRC=$BUILD/ovs-src
OBJ=$BUILD/ovs
PREFIX=$BUILD/ovs-install
JOBS=${JOBS:-$(($(nproc) + 1))}

die() { echo "ovs.sh: error: $*" >&2; exit 1; }
log() { echo "ovs.sh: $*" >&2; }

series_patches() {
	grep -v -E '^[[:space:]]*(#|$)' "$PATCHES/series" | awk '{print $1}'
}

ensure_pristine() {
	[ -r "$TARBALL" ] || die "$TARBALL missing (apt-get install openvswitch-source, or run 'make deps')"
	local stamp
	stamp=$(stat -c '%s %Y' "$TARBALL")
	if [ -f "$PRISTINE/.stamp" ] && [ "$(cat "$PRISTINE/.stamp")" = "$stamp" ]; then
		return
	fi
	log "unpacking $TARBALL"
	rm -rf "$PRISTINE"
	mkdir -p "$PRISTINE"
	tar -xzf "$TARBALL" -C "$PRISTINE" --strip-components=1
	echo "$stamp" >"$PRISTINE/.stamp"
}

# Generated in the source directory by the build (from files the patches
# change): never taken from the tarball, never deleted by the sync.
GENERATED=(/tests/testsuite /tests/system-kmod-testsuite /tests/system-userspace-testsuite
	/tests/system-tso-testsuite /tests/system-afxdp-testsuite /tests/system-offloads-testsuite
	/tests/system-dpdk-testsuite /tests/ovsdb-cluster-testsuite)

prepare() {
	ensure_pristine
	local stamp
	stamp=$( (cat "$PRISTINE/.stamp" "$PATCHES/series"; for p in $(series_patches); do cat "$PATCHES/$p"; done) |
		sha256sum | cut -d' ' -f1)
	if [ -f "$SRC/.dcnet-stamp" ] && [ "$(cat "$SRC/.dcnet-stamp")" = "$stamp" ]; then
		return
	fi
	local staging=$BUILD/ovs-staging
	rm -rf "$staging"
	mkdir -p "$staging"
	cp -al "$PRISTINE/." "$staging/"	# also when $PRISTINE is a symlink
	rm -f "$staging/.stamp"
	local p n=0
	for p in $(series_patches); do
		[ -r "$PATCHES/$p" ] || die "ovs-patches/$p (listed in series) missing"
		# GNU patch writes a new file and renames it: the hard links to
		# the pristine tree are broken for exactly the files it changes.
		patch -d "$staging" -p1 -s --no-backup-if-mismatch -F0 <"$PATCHES/$p" ||
			{ rm -rf "$staging"; die "ovs-patches/$p does not apply"; }
		n=$((n + 1))
	done
	local ex=() g
	for g in "${GENERATED[@]}"; do ex+=(--exclude="$g"); done
	if [ ! -d "$SRC" ]; then
		# The first copy keeps the tarball's times, so that configure,
		# the Makefile.in files and what they are made from stay in
		# order (make would otherwise rerun automake and configure).
		mkdir -p "$SRC"
		rsync -rlpt "$staging/" "$SRC/"
	else
		# Afterwards only files whose content changed are rewritten,
		# with the current time: make rebuilds what depends on them,
		# a patch dropped from the series included.
		rsync -rlpc --delete --exclude=/.dcnet-stamp "${ex[@]}" "$staging/" "$SRC/"
	fi
	rm -rf "$staging"
	echo "$stamp" >"$SRC/.dcnet-stamp"
	log "source ready: $SRC (Open vSwitch $(version), $n patches)"
}

version() {
	sed -n 's/^AC_INIT(openvswitch, *\([^,]*\),.*/\1/p' "$PRISTINE/configure.ac"
}

configure() {
	# Reconfigure when the options below change (kept in a stamp).
	local opts=(--prefix="$PREFIX" --localstatedir=/var --sysconfdir=/etc
		--disable-shared --enable-silent-rules)
	local want="${opts[*]} CC=ccache gcc"
	if [ -f "$OBJ/config.status" ] && [ "$(cat "$OBJ/.dcnet-configure" 2>/dev/null)" = "$want" ]; then
		return
	fi
	log "configuring in $OBJ"
	mkdir -p "$OBJ"
	(cd "$OBJ" && "$SRC/configure" "${opts[@]}" CC="ccache gcc" >configure.log 2>&1) ||
		{ tail -20 "$OBJ/configure.log" >&2; die "configure failed (see $OBJ/configure.log)"; }
	echo "$want" >"$OBJ/.dcnet-configure"
}

build() {
	prepare
	configure
	local t0=$SECONDS
	make -C "$OBJ" -j"$JOBS" -s >"$OBJ/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$OBJ/build.log" | head -30 >&2; die "build failed (see $OBJ/build.log)"; }
	# Installed only when something was rebuilt since the last install.
	if [ ! -f "$PREFIX/.dcnet-installed" ] ||
		[ -n "$(find "$OBJ/vswitchd/ovs-vswitchd" "$OBJ/utilities/ovs-ofctl" "$OBJ/utilities/ovs-dpctl" \
			"$OBJ/ovsdb/ovsdb-server" "$OBJ/utilities/ovs-vsctl" "$OBJ/utilities/ovs-appctl" \
			-newer "$PREFIX/.dcnet-installed" 2>/dev/null)" ]; then
		make -C "$OBJ" -s install >"$OBJ/install.log" 2>&1 ||
			{ tail -20 "$OBJ/install.log" >&2; die "make install failed (see $OBJ/install.log)"; }
		touch "$PREFIX/.dcnet-installed"
	fi
	log "built Open vSwitch $(version) in $OBJ ($((SECONDS - t0)) s), installed in $PREFIX"
}

check() {
	build
	local flags=("$@")
	[ ${#flags[@]} -gt 0 ] || flags=(-k flowcell)
	make -C "$OBJ" -j"$JOBS" -s check TESTSUITEFLAGS="${flags[*]} -j$JOBS"
}

devtree() {
	local dir=${1:?usage: $0 devtree DIR}
	[ ! -e "$dir" ] || die "$dir exists"
	ensure_pristine
	mkdir -p "$dir"
	cp -a "$PRISTINE/." "$dir/"
	rm -f "$dir/.stamp"
	git -C "$dir" init -q
	git -C "$dir" add -A -f .
	git -C "$dir" -c user.name=pristine -c user.email=pristine@invalid \
		commit -q -m "Open vSwitch $(version) ($(basename "$TARBALL"))"
	local p
	for p in $(series_patches); do
		git -C "$dir" am -q --keep-cr "$PATCHES/$p" || die "git am $p failed in $dir"
	done
	log "$dir: $(git -C "$dir" rev-list --count HEAD) commits; edit, commit, then: $0 export $dir"
}

export_series() {
	local dir=${1:?usage: $0 export DIR}
	local base
	base=$(git -C "$dir" rev-list --max-parents=0 HEAD)
	rm -f "$PATCHES"/*.patch
	git -C "$dir" format-patch -q --no-numbered --zero-commit --no-signature -o "$PATCHES" "$base..HEAD"
	{
		sed -n '/^#/p' "$PATCHES/series"
		(cd "$PATCHES" && ls -- *.patch)
	} >"$PATCHES/series.new"
	mv "$PATCHES/series.new" "$PATCHES/series"
	log "exported $(series_patches | wc -l) patches to $PATCHES"
}

# One build at a time per build cache.
mkdir -p "$BUILD"
exec 9>"$BUILD/.ovs.lock"
flock 9

cmd=${1:-build}
[ $# -eq 0 ] || shift
case "$cmd" in
prepare) prepare ;;
build) build ;;
check) check "$@" ;;
version) ensure_pristine; version ;;
devtree) devtree "$@" ;;
export) export_series "$@" ;;
*) die "usage: $0 [prepare|build|check [TESTSUITEFLAGS...]|devtree DIR|export DIR|version]" ;;
esac
