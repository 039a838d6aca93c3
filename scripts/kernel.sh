#!/usr/bin/env bash
# Build the patched kernel.
#
#   scripts/kernel.sh prepare            pristine tree + new files + kernel-patches/ -> build/linux
#   scripts/kernel.sh config  FLAVOR     build/obj-FLAVOR/.config (FLAVOR: debug | release | hardware | cloud | vm)
#   scripts/kernel.sh build   FLAVOR     bzImage + modules in build/obj-FLAVOR
#   scripts/kernel.sh deb     FLAVOR     Debian packages of build/obj-FLAVOR (bindeb-pkg)
#                                        in build/packages/kernel-FLAVOR
#   scripts/kernel.sh version            the kernel version of the source package
#   scripts/kernel.sh check-version [KERNEL [DEBIAN]]
#                                        compare the source with the version the
#                                        patches were made for (kernel-patches/BASE,
#                                        or KERNEL and DEBIAN) and try the series
#                                        on a scratch copy of the files it touches
#
# The pristine tree (build/pristine) is never modified.  build/linux is the
# patched source tree; it is only rewritten where the result differs, so an
# edit to one file in net/ rebuilds only what depends on it.  Objects live
# out of tree (make O=), one directory per flavor, compiled through ccache.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The kernel trees and objects live in one place per machine (not per
# clone): a fresh clone with the same patches then rebuilds nothing, and
# the absolute paths the kernel compiles with stay the same, which ccache
# needs to hit.  Builds are serialised with a lock.
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
PRISTINE=$BUILD/pristine
TREE=$BUILD/linux
VENV=${VENV:-$ROOT/.venv}
# The source the patches were made for ("key value" lines: package, debian, kernel).
BASE_FILE=$ROOT/kernel-patches/BASE
PATCH_LOG=$BUILD/patch.log
JOBS=${JOBS:-$(($(nproc) + 1))}

die() { echo "kernel.sh: error: $*" >&2; exit 1; }
log() { echo "kernel.sh: $*" >&2; }

# Files of this repository that are new files in the kernel tree:
# "repo-path kernel-path" per line.
overlay_files() {
	echo "Kconfig net/Kconfig.dcnet"
	local d
	for d in net include; do
		[ -d "$ROOT/$d" ] || continue
		(cd "$ROOT" && find "$d" -type f \( -name '*.c' -o -name '*.h' \) | sort)
	done | while read -r f; do echo "$f $f"; done
	if [ -d "$ROOT/Documentation" ]; then
		(cd "$ROOT" && find Documentation -type f \( -name '*.rst' -o -name '*.yaml' \) | sort)
	fi | while read -r f; do echo "$f $f"; done
}

series_patches() {
	grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/series" | awk '{print $1}'
}

ensure_pristine() {
	[ -r "$TARBALL" ] || die "$TARBALL missing (apt-get install linux-source-6.12, or run 'make deps')"
	local stamp
	stamp=$(stat -c '%s %Y' "$TARBALL")
	if [ -f "$PRISTINE/.stamp" ] && [ "$(cat "$PRISTINE/.stamp")" = "$stamp" ]; then
		return
	fi
	log "unpacking $TARBALL"
	rm -rf "$PRISTINE"
	mkdir -p "$PRISTINE"
	tar -xJf "$TARBALL" -C "$PRISTINE" --strip-components=1
	echo "$stamp" >"$PRISTINE/.stamp"
}

kernel_version() {
	make -s -C "$PRISTINE" kernelversion 2>/dev/null
}

# The Debian version of the tarball when an installed package owns it
# (linux-source-6.12 for the default tarball); empty otherwise.
debian_version() {
	command -v dpkg-query >/dev/null || return 0
	case "$TARBALL" in /*) ;; *) return 0 ;; esac
	local pkg
	pkg=$(dpkg-query -S "$TARBALL" 2>/dev/null | head -1 | cut -d: -f1 | cut -d, -f1) || true
	[ -n "$pkg" ] || return 0
	dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true
}

base_field() {
	awk -v k="$1" '$1 == k { print $2; exit }' "$BASE_FILE"
}

# The versions found in the unpacked tarball and those the patches were
# made for (kernel-patches/BASE, unless cmd_check_version set them).
found_kernel='' found_debian='' want_kernel='' want_debian='' want_package='' want_from=kernel-patches/BASE
read_versions() {
	[ -z "$found_kernel" ] || return 0
	found_kernel=$(kernel_version)
	found_debian=$(debian_version)
	if [ -z "$want_kernel" ]; then
		[ -r "$BASE_FILE" ] || die "$BASE_FILE missing: it records the kernel source the patches were made for"
		want_kernel=$(base_field kernel)
		want_debian=$(base_field debian)
		want_package=$(base_field package)
		[ -n "$want_kernel" ] || die "$BASE_FILE names no kernel version"
	fi
	want_package=${want_package:-linux-source-6.12}
}

# "Linux 6.12.117 (linux-source-6.12 6.12.117-1~deb12u1)" of found|want.
describe_version() {
	local k d
	if [ "$1" = found ]; then k=$found_kernel d=$found_debian; else k=$want_kernel d=$want_debian; fi
	echo "Linux $k${d:+ ($want_package $d)}"
}

# The Debian versions are compared only where both are known.
versions_match() {
	read_versions
	[ "$found_kernel" = "$want_kernel" ] || return 1
	[ -z "$found_debian" ] || [ -z "$want_debian" ] || [ "$found_debian" = "$want_debian" ]
}

# A source other than the one the patches were made for is not an error
# (the 6.12 LTS line moves with security updates and most of them leave
# the patches applying): say so, and try the patches anyway.
check_base() {
	versions_match && return 0
	log "warning: the kernel source is $(describe_version found), but the patches in kernel-patches/ were made for $(describe_version want) ($want_from)"
	log "warning: trying them anyway; if one does not apply, install the source they were made for or refresh the series"
}

# Stop on a patch that does not apply ($1), with both versions and what to do.
patch_failed() {
	local msg
	read_versions
	msg="kernel-patches/$1 does not apply to $(describe_version found); the patches were made for $(describe_version want) ($want_from)."
	if versions_match; then
		msg+=$'\n'"  The versions agree, so the patch itself is broken: fix it in kernel-patches/ (patch output above)."
	else
		msg+=$'\n'"  Either install the source the patches were made for, if the archive still has it"
		msg+=$'\n'"  (apt-cache policy $want_package lists the versions available; older ones are on snapshot.debian.org):"
		msg+=$'\n'"      apt-get install $want_package=${want_debian:-VERSION}"
		msg+=$'\n'"  or refresh the series for Linux $found_kernel: apply it by hand, resolve the rejects (patch output above),"
		msg+=$'\n'"  regenerate kernel-patches/ and record the new versions in kernel-patches/BASE."
	fi
	die "$msg"
}

patch_stamp() {
	{
		cat "$PRISTINE/.stamp"
		cat "$ROOT/kernel-patches/series"
		for p in $(series_patches); do cat "$ROOT/kernel-patches/$p"; done
	} | sha256sum | cut -d' ' -f1
}

# Apply kernel-patches/ to a copy of the pristine tree in $1.
apply_series() {
	local dir=$1 p
	for p in $(series_patches); do
		[ -f "$ROOT/kernel-patches/$p" ] || die "kernel-patches/series names $p, which does not exist"
		if ! patch -d "$dir" -p1 -N -s --no-backup-if-mismatch --dry-run \
			<"$ROOT/kernel-patches/$p" >"$PATCH_LOG" 2>&1; then
			cat "$PATCH_LOG" >&2
			patch_failed "$p"
		fi
		patch -d "$dir" -p1 -N -s --no-backup-if-mismatch <"$ROOT/kernel-patches/$p" >/dev/null
		log "applied $p"
	done
	if find "$dir" -name '*.rej' -o -name '*.orig' | grep -q .; then
		die "rejects left in the tree"
	fi
}

cmd_prepare() {
	mkdir -p "$BUILD"
	ensure_pristine
	log "Linux $(kernel_version) from $TARBALL"
	check_base
	local stamp
	stamp=$(patch_stamp)
	if [ ! -f "$TREE/.dcnet-stamp" ] || [ "$(cat "$TREE/.dcnet-stamp")" != "$stamp" ]; then
		local staging=$BUILD/staging
		rm -rf "$staging"
		# Hard links are safe: patch(1) writes a new file and renames it.
		# "$PRISTINE/.": the contents, also when $PRISTINE is a symlink
		# (cp -a would copy the link, and the series would patch the
		# pristine tree it points to)
		mkdir -p "$staging"
		cp -al "$PRISTINE/." "$staging/"
		apply_series "$staging"
		mkdir -p "$TREE"
		# Content comparison (-c) and no time preservation: only files
		# whose content changed get a new mtime, so make stays incremental.
		rsync -rlpc --delete --exclude=/.dcnet-stamp --exclude=/.dcnet-overlay "$staging/" "$TREE/"
		rm -rf "$staging"
		echo "$stamp" >"$TREE/.dcnet-stamp"
	fi
	local src dst
	# New files that left the repository leave the tree too.
	local wanted
	wanted=$(overlay_files | awk '{print $2}')
	if [ -f "$TREE/.dcnet-overlay" ]; then
		while read -r dst; do
			grep -qxF "$dst" <<<"$wanted" || rm -f "$TREE/$dst"
		done <"$TREE/.dcnet-overlay"
	fi
	echo "$wanted" >"$TREE/.dcnet-overlay"
	while read -r src dst; do
		if [ -e "$PRISTINE/$dst" ]; then
			die "$src would overwrite the kernel's $dst: change existing files through kernel-patches/"
		fi
		mkdir -p "$(dirname "$TREE/$dst")"
		cmp -s "$ROOT/$src" "$TREE/$dst" || cp "$ROOT/$src" "$TREE/$dst"
	done < <(overlay_files)
	log "tree ready: $TREE"
}

# Compare the source with the version the patches were made for
# (kernel-patches/BASE, or KERNEL [DEBIAN] from the command line) and try
# the series on a scratch copy of the pristine files it touches: exit 0
# when it applies (with a warning if the versions differ), 1 with what to
# do when a patch does not.  Reads the pristine tree only, so it needs no lock.
cmd_check_version() {
	if [ $# -gt 0 ]; then
		want_kernel=$1 want_debian=${2:-} want_from="as given on the command line"
	fi
	ensure_pristine
	check_base
	local scratch p f
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/dcnet-check-version.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$scratch'" EXIT
	for p in $(series_patches); do
		[ -f "$ROOT/kernel-patches/$p" ] || die "kernel-patches/series names $p, which does not exist"
		sed -n -E 's#^(---|\+\+\+) [ab]/([^[:space:]]+).*#\2#p' "$ROOT/kernel-patches/$p"
	done | sort -u | while read -r f; do
		[ -f "$PRISTINE/$f" ] || continue
		mkdir -p "$(dirname "$scratch/tree/$f")"
		cp "$PRISTINE/$f" "$scratch/tree/$f"
	done
	mkdir -p "$scratch/tree"
	PATCH_LOG=$scratch/patch.log
	apply_series "$scratch/tree"
	if versions_match; then
		log "the series applies to $(describe_version found), the source it was made for"
	else
		log "the series applies to $(describe_version found), although it was made for $(describe_version want)"
	fi
}

vng_fragment() {
	local out=$1 cfg
	cfg=$VENV/bin/virtme-configkernel
	[ -x "$cfg" ] || cfg=$(command -v virtme-configkernel || true)
	[ -n "$cfg" ] || die "virtme-configkernel not found (run 'make deps')"
	(cd "$TREE" && "$cfg" --defconfig --dry-run) | grep -E '^(CONFIG_|# CONFIG_)' >"$out.tmp"
	mv "$out.tmp" "$out"
}

# Every option the fragments $2... ask for must have survived olddefconfig
# in the configuration $1.
check_options() {
	local config=$1 bad=0 line name want got
	shift
	while read -r line; do
		case "$line" in
		CONFIG_*=*) name=${line%%=*}; want=${line#*=} ;;
		"# CONFIG_"*" is not set") name=${line#\# }; name=${name%% *}; want=n ;;
		*) continue ;;
		esac
		got=$(grep -E "^$name=|^# $name is not set" "$config" | head -1)
		case "$got" in
		"$name=$want") ;;
		"# $name is not set") [ "$want" = n ] || { log "$name: wanted $want, got n"; bad=1; } ;;
		"") [ "$want" = n ] || { log "$name: wanted $want, option unknown or unmet dependency"; bad=1; } ;;
		*) log "$name: wanted $want, got ${got#*=}"; bad=1 ;;
		esac
	done < <(cat "$@")
	return $bad
}

# Debian's configurations (package linux-config-6.12) of the flavors for
# real machines: hardware is linux-image-amd64's, cloud linux-image-cloud-amd64's
# (virtual machines: virtio, Xen, Hyper-V, ENA, gVNIC; a third of the
# modules).  Both take kconfig/hardware.config.
debian_config() {
	local d=${DCNET_DEBIAN_CONFIG_DIR:-/usr/src/linux-config-6.12}
	case "$1" in
	hardware) echo "$d/config.amd64_none_amd64.xz" ;;
	cloud | vm) echo "$d/config.amd64_none_cloud-amd64.xz" ;;
	esac
}
# The vm flavor is the cloud one reduced by localmodconfig to the modules in
# kconfig/vm-lsmod.txt: lsmod of a Debian 12 virtual machine on Debian's cloud
# kernel with what the testbed loads (OVS, qdiscs, classifiers, DCTCP, veth,
# bridge, diag) in use.  It is what testbed/physical/vmcluster.sh installs:
# a quarter of the cloud kernel's build.
VM_LSMOD=$ROOT/kconfig/vm-lsmod.txt

cmd_config() {
	local flavor=${1:?flavor}
	local obj=$BUILD/obj-$flavor
	local frags checked start debcfg
	debcfg=$(debian_config "$flavor")
	[ -n "$debcfg" ] || [ -f "$ROOT/kconfig/$flavor.config" ] || die "unknown flavor $flavor"
	mkdir -p "$obj"
	if [ -n "$debcfg" ]; then
		[ -r "$debcfg" ] || die "$debcfg missing (apt-get install linux-config-6.12)"
		xzcat -f "$debcfg" >"$obj/debian.config"
		frags=("$ROOT/kconfig/hardware.config")
		# Debug information (and with it BTF) is Debian's default and
		# doubles the build; DCNET_DEBUG_INFO=1 keeps it.
		if [ "${DCNET_DEBUG_INFO:-0}" != 1 ]; then
			frags+=("$ROOT/kconfig/no-debug-info.config")
		fi
		checked=("${frags[@]}")
		start=("$obj/debian.config")
	else
		vng_fragment "$BUILD/vng.config"
		frags=("$BUILD/vng.config" "$ROOT/kconfig/base.config" "$ROOT/kconfig/$flavor.config")
		checked=("$ROOT/kconfig/base.config" "$ROOT/kconfig/$flavor.config")
		start=()
	fi
	local stamp
	[ "$flavor" != vm ] || start+=("$VM_LSMOD")
	stamp=$(cat "${start[@]}" "${frags[@]}" "$ROOT/Kconfig" "$TREE/.dcnet-stamp" | sha256sum | cut -d' ' -f1)
	if [ -f "$obj/.config" ] && [ -f "$obj/.dcnet-config-stamp" ] &&
		[ "$(cat "$obj/.dcnet-config-stamp")" = "$stamp" ]; then
		return
	fi
	log "configuring $flavor kernel"
	if [ ${#start[@]} -gt 0 ]; then
		cp "${start[0]}" "$obj/.config"
		if [ "$flavor" = vm ]; then
			make -s -C "$TREE" O="$obj" LSMOD="$VM_LSMOD" localmodconfig >"$obj/localmodconfig.log" 2>&1 ||
				{ tail -20 "$obj/localmodconfig.log" >&2; die "localmodconfig failed"; }
		fi
	else
		make -s -C "$TREE" O="$obj" x86_64_defconfig >/dev/null
	fi
	(cd "$obj" && "$TREE/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}" >"$obj/merge.log" 2>&1) ||
		{ cat "$obj/merge.log" >&2; die "merge_config failed"; }
	make -s -C "$TREE" O="$obj" olddefconfig >/dev/null
	check_options "$obj/.config" "${checked[@]}" ||
		die "the $flavor configuration does not hold what kconfig/ asks for"
	echo "$stamp" >"$obj/.dcnet-config-stamp"
}

# make in the patched tree for obj-$1, through ccache, with the build
# metadata fixed (the same tree builds the same kernel on every machine).
kmake() {
	local flavor=$1
	shift
	local cc=gcc
	if command -v ccache >/dev/null; then
		cc="ccache gcc"
		export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
		export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
	fi
	make -C "$TREE" O="$BUILD/obj-$flavor" -j"$JOBS" CC="$cc" \
		KBUILD_BUILD_TIMESTAMP='2024-01-01' KBUILD_BUILD_USER=dcnet KBUILD_BUILD_HOST=dcnet \
		"$@"
}

cmd_build() {
	local flavor=${1:?flavor}
	local obj=$BUILD/obj-$flavor
	cmd_prepare
	cmd_config "$flavor"
	log "building $flavor kernel (Linux $(kernel_version)) in $obj with -j$JOBS"
	local t0=$SECONDS
	# a line a minute while make runs: a fresh machine's first build
	# takes 10-30 minutes with nothing else on the terminal
	(
		while sleep 60 >/dev/null 2>&1; do
			log "building $flavor kernel: $(grep -cE '^  (CC|LD|AR) ' "$obj/build.log" 2>/dev/null || true) steps done, $((SECONDS - t0)) s"
		done
	) </dev/null &
	local hb=$!
	if ! kmake "$flavor" bzImage modules >"$obj/build.log" 2>&1; then
		kill "$hb" 2>/dev/null || true
		grep -E 'error|Error' "$obj/build.log" | head -40 >&2
		tail -20 "$obj/build.log" >&2
		die "$flavor build failed (log: $obj/build.log)"
	fi
	kill "$hb" 2>/dev/null || true
	grep -E ': warning:' "$obj/build.log" | grep -E 'net/(ipv4|ipv6|sched|openvswitch|core)' >&2 || true
	log "built $(cat "$obj/include/config/kernel.release") in $((SECONDS - t0)) s: $obj/arch/x86/boot/bzImage"
}

# The Debian version of the kernel packages: the source package's version
# with "+dcnetN" appended (N: DCNET_PKG_REVISION, default 1), so that it sorts
# above the Debian kernel it was built from; without a Debian source package,
# KERNELVERSION-0+dcnetN.
deb_version() {
	local d
	d=$(debian_version)
	echo "${d:-$(kernel_version)-0}+dcnet${DCNET_PKG_REVISION:-1}"
}

# Debian packages of the FLAVOR kernel with the kernel's own bindeb-pkg:
# linux-image-RELEASE, linux-headers-RELEASE and linux-libc-dev (and
# linux-image-RELEASE-dbg with debug information) in
# $BUILD/packages/kernel-FLAVOR/, with the final .config beside them.
cmd_deb() {
	local flavor=${1:?flavor}
	local obj=$BUILD/obj-$flavor out=$BUILD/packages/kernel-$flavor
	cmd_prepare
	cmd_config "$flavor"
	local version
	version=$(deb_version)
	log "packaging $flavor kernel (Linux $(kernel_version), package version $version) in $obj with -j$JOBS"
	local t0=$SECONDS
	# bindeb-pkg writes the packages in the object directory's parent.
	rm -f "$BUILD"/linux-*_"$version"_*.deb "$BUILD"/linux-dcnet_"$version"_*.buildinfo \
		"$BUILD"/linux-dcnet_"$version"_*.changes
	kmake "$flavor" KDEB_PKGVERSION="$version" KDEB_SOURCENAME=linux-dcnet \
		KBUILD_BUILD_VERSION=1 bindeb-pkg >"$obj/deb.log" 2>&1 ||
		{ grep -E 'error|Error' "$obj/deb.log" | head -40 >&2; tail -20 "$obj/deb.log" >&2; die "$flavor packaging failed (log: $obj/deb.log)"; }
	rm -rf "$out"
	mkdir -p "$out"
	mv "$BUILD"/linux-*_"$version"_*.deb "$out/"
	rm -f "$BUILD"/linux-dcnet_"$version"_*.buildinfo "$BUILD"/linux-dcnet_"$version"_*.changes
	cp "$obj/.config" "$out/config-$(cat "$obj/include/config/kernel.release")"
	log "packaged $(cat "$obj/include/config/kernel.release") in $((SECONDS - t0)) s: $(cd "$out" && echo *.deb)"
}

mkdir -p "$BUILD"
if [ -z "${DCNET_KERNEL_LOCKED:-}" ] && [ "${1:-}" != version ] && [ "${1:-}" != check-version ]; then
	export DCNET_KERNEL_LOCKED=1
	exec flock "$BUILD/.lock" "$0" "$@"
fi

case "${1:-}" in
prepare) cmd_prepare ;;
config) cmd_prepare; cmd_config "${2:?flavor}" ;;
build) cmd_build "${2:?flavor}" ;;
deb) cmd_deb "${2:?flavor}" ;;
version) ensure_pristine; kernel_version ;;
check-version) shift; cmd_check_version "$@" ;;
*) echo "usage: $0 prepare|config FLAVOR|build FLAVOR|deb FLAVOR|version|check-version [KERNEL [DEBIAN]]" >&2; exit 2 ;;
esac
