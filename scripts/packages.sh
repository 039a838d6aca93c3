#!/usr/bin/env bash
# Debian packages of everything a testbed host runs, and a local apt
# repository they are installed from (make packages).
#
#   scripts/packages.sh [all]          everything below, then the repository
#   scripts/packages.sh kernel [FLAVOR]
#                                      the kernel (bindeb-pkg; FLAVOR hardware,
#                                      the default, cloud or release:
#                                      scripts/kernel.sh); `all` and `repo` take
#                                      DCNET_PKG_FLAVOR
#   scripts/packages.sh iproute2       Debian's iproute2 with iproute2-patches/
#   scripts/packages.sh ovs            Debian's openvswitch with ovs-patches/
#   scripts/packages.sh tools          dcnet-tools (dltraffic)
#   scripts/packages.sh repo           the apt repository from what is built
#   scripts/packages.sh versions       the package versions this tree builds
#
# Everything is built from Debian's own source packages, the project's
# patches added to debian/patches/ as quilt patches (series entries
# dcnet/NNNN-*.patch) with a changelog entry, by dpkg-buildpackage; each
# version is Debian's with "+dcnet1" appended (DCNET_PKG_REVISION), so it
# sorts above the package it was built from and says where it comes from.
#
# Layout under $BUILD/packages:
#   kernel-FLAVOR/  linux-image-*, linux-headers-*, linux-libc-dev (.deb)
#   iproute2/ ovs/ tools/
#                   each package's .deb (and the source package: .dsc,
#                   .orig.tar.*, .debian.tar.xz, .buildinfo, .changes)
#   build/          the unpacked sources the packages were built in
#   apt/            the repository: a flat apt repository (Packages,
#                   Release with Origin "dcnet"), unsigned unless
#                   DCNET_APT_KEY names a gpg key to sign it with
#                   (InRelease, Release.gpg); hosts use it with
#                   [trusted=yes] otherwise (dcnet.sources, dcnet.pref
#                   beside it are the files a host needs)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
OUT=$BUILD/packages
WORK=$OUT/build
JOBS=${JOBS:-$(($(nproc) + 1))}
REV=${DCNET_PKG_REVISION:-1}
SUFFIX=+dcnet$REV
MAINT="dcnet <dcnet@example.org>"
# Raised when the way a package is built changes (a part whose inputs and
# this are unchanged is not built again).
PACKAGING=packaging-2
OVS_TARBALL=${OVS_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
. "$ROOT/scripts/debsrc.sh"

die() { echo "packages: error: $*" >&2; exit 1; }
log() { echo "packages: $*" >&2; }

# Packaging tools; the build dependencies of each source package are
# installed with apt-get build-dep from its unpacked tree.
TOOLS=(dpkg-dev debhelper fakeroot apt-utils)

need_tools() {
	local missing=() p
	for p in "${TOOLS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]}"
	as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

as_root() {
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive "$@"
	else
		sudo DEBIAN_FRONTEND=noninteractive "$@"
	fi
}

build_deps() {
	local dir=$1
	(cd "$dir" && dpkg-checkbuilddeps >/dev/null 2>&1) && return
	log "installing the build dependencies of $(cd "$dir" && dpkg-parsechangelog -S Source)"
	as_root apt-get build-dep -y -qq "$dir" >/dev/null
}

# A reproducible date for changelog entries: the time of the repository's
# last commit (or of the series files when the tree is not a git checkout).
entry_date() {
	local t
	t=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null) || t=
	[ -n "$t" ] || t=$(stat -c %Y "$ROOT/Makefile")
	LC_ALL=C date -u -R -d "@$t"
}

# add_patches SRC PATCHDIR SUMMARY: PATCHDIR's series (or its *.patch in
# order) into SRC/debian/patches/dcnet/, appended to the quilt series, and a
# changelog entry one "+dcnetN" above Debian's version.
add_patches() {
	local src=$1 dir=$2 summary=$3 p list
	mkdir -p "$src/debian/patches/dcnet"
	if [ -f "$dir/series" ]; then
		list=$(grep -v -E '^[[:space:]]*(#|$)' "$dir/series" | awk '{print $1}')
	else
		list=$(cd "$dir" && ls ./*.patch | sed 's#^\./##')
	fi
	[ -f "$src/debian/patches/series" ] || : >"$src/debian/patches/series"
	for p in $list; do
		cp "$dir/$p" "$src/debian/patches/dcnet/$p"
		echo "dcnet/$p" >>"$src/debian/patches/series"
	done
	local name version dist
	name=$(cd "$src" && dpkg-parsechangelog -S Source)
	version=$(cd "$src" && dpkg-parsechangelog -S Version)
	# the packages are for bookworm whatever Debian's last upload said
	# (unstable, bookworm-security)
	dist=bookworm
	{
		echo "$name ($version$SUFFIX) $dist; urgency=medium"
		echo
		echo "  * dcnet: $summary"
		for p in $list; do echo "    - $p"; done
		echo
		echo " -- $MAINT  $(entry_date)"
		echo
		cat "$src/debian/changelog"
	} >"$src/debian/changelog.new"
	mv "$src/debian/changelog.new" "$src/debian/changelog"
}

# dpkg-buildpackage in SRC (source and binary: dpkg-source applies every
# patch of the series first), results moved to $OUT/NAME.
buildpackage() {
	local src=$1 name=$2 opts=$3
	local t0=$SECONDS
	build_deps "$src"
	log "building $(cd "$src" && dpkg-parsechangelog -S Source) $(cd "$src" && dpkg-parsechangelog -S Version) (log: $src.log)"
	# Debian's toolchain only: a python3 in /usr/local (these machines have
	# one) lacks Debian's setup.py --install-layout=deb that OVS's rules use
	(cd "$src" && PATH=/usr/sbin:/usr/bin:/sbin:/bin DEB_BUILD_OPTIONS="$opts parallel=$JOBS" \
		SOURCE_DATE_EPOCH=$(date -d "$(entry_date)" +%s) dpkg-buildpackage -us -uc -sa >"$src.log" 2>&1) ||
		{ tail -40 "$src.log" >&2; die "$name: dpkg-buildpackage failed (log: $src.log)"; }
	rm -rf "${OUT:?}/$name"
	mkdir -p "$OUT/$name"
	local parent
	parent=$(dirname "$src")
	find "$parent" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.ddeb' -o -name '*.dsc' -o -name '*.tar.*' \
		-o -name '*.buildinfo' -o -name '*.changes' \) -exec mv -t "$OUT/$name" {} +
	log "$name: $(cd "$OUT/$name" && ls ./*.deb | wc -l) packages in $((SECONDS - t0)) s: $OUT/$name"
}

# fresh NAME INPUT...: true when $OUT/NAME was built from exactly these
# inputs (files hashed, other words taken as they are); mark NAME INPUT...
# records them after a build.  DCNET_PKG_FORCE=1 rebuilds anyway.
inputs_hash() {
	local a
	for a in "$@"; do
		if [ -f "$a" ]; then sha256sum "$a" | cut -d' ' -f1; else echo "$a"; fi
	done | sha256sum | cut -d' ' -f1
}
fresh() {
	local name=$1
	shift
	[ "${DCNET_PKG_FORCE:-0}" != 1 ] && [ -f "$OUT/$name/.stamp" ] &&
		[ "$(cat "$OUT/$name/.stamp")" = "$(inputs_hash "$@")" ] &&
		ls "$OUT/$name"/*.deb >/dev/null 2>&1
}
mark() {
	local name=$1
	shift
	inputs_hash "$@" >"$OUT/$name/.stamp"
}

cmd_kernel() {
	"$ROOT/scripts/kernel.sh" deb "${1:-hardware}"
}

cmd_iproute2() {
	need_tools
	local srcpkg=$BUILD/iproute2-src
	if ! ls "$srcpkg"/iproute2_*.dsc >/dev/null 2>&1; then
		log "fetching the iproute2 source package"
		debsrc_fetch "$srcpkg" iproute2
	fi
	local dsc inputs
	dsc=$(ls "$srcpkg"/iproute2_*.dsc | head -1)
	inputs=("$dsc" "$SUFFIX" "$PACKAGING" "$ROOT"/iproute2-patches/*.patch)
	if fresh iproute2 "${inputs[@]}"; then
		log "iproute2: up to date in $OUT/iproute2"
		return
	fi
	rm -rf "$WORK/iproute2"
	mkdir -p "$WORK/iproute2"
	dpkg-source -q -x "$dsc" "$WORK/iproute2/src" >/dev/null
	cp "$srcpkg"/iproute2_*.orig.tar.* "$WORK/iproute2/"
	add_patches "$WORK/iproute2/src" "$ROOT/iproute2-patches" \
		"tc: HTB ecn_thresh/ecn_mode/ecn_flows, the htback action, the fastlane qdisc; ss: D2TCP and FastLane OFO state"
	buildpackage "$WORK/iproute2/src" iproute2 nocheck
	mark iproute2 "${inputs[@]}"
}

# Debian's openvswitch source package.  The archive serves its .dsc and
# debian.tar.xz but no longer the upstream tarball; openvswitch-source holds
# the same release with Debian's patches applied, so the upstream tree is
# that tarball with Debian's patches reverted (each must revert cleanly).
cmd_ovs() {
	need_tools
	[ -r "$OVS_TARBALL" ] || die "$OVS_TARBALL missing (apt-get install openvswitch-source)"
	local srcpkg=$BUILD/ovs-debsrc
	if ! ls "$srcpkg"/openvswitch_*.debian.tar.* >/dev/null 2>&1; then
		log "fetching the openvswitch source package"
		debsrc_fetch "$srcpkg" openvswitch
		ls "$srcpkg"/openvswitch_*.debian.tar.* >/dev/null 2>&1 || die "no openvswitch debian.tar in the archive"
	fi
	local w=$WORK/ovs inputs
	inputs=("$OVS_TARBALL" "$(ls "$srcpkg"/openvswitch_*.debian.tar.* | head -1)" "$SUFFIX" "$PACKAGING"
		"$ROOT/ovs-patches/series" "$ROOT"/ovs-patches/*.patch)
	if fresh ovs "${inputs[@]}"; then
		log "ovs: up to date in $OUT/ovs"
		return
	fi
	rm -rf "$w"
	mkdir -p "$w/debian-dir" "$w/upstream"
	tar -C "$w/debian-dir" -xf "$(ls "$srcpkg"/openvswitch_*.debian.tar.* | head -1)"
	tar -C "$w/upstream" -xzf "$OVS_TARBALL" --strip-components=1
	rm -rf "$w/upstream/debian"
	local p
	for p in $(grep -v -E '^[[:space:]]*(#|$)' "$w/debian-dir/debian/patches/series" | tac); do
		patch -d "$w/upstream" -p1 -R -s --no-backup-if-mismatch <"$w/debian-dir/debian/patches/$p" ||
			die "Debian's $p does not revert from $OVS_TARBALL"
	done
	local upver
	upver=$(cd "$w/debian-dir" && dpkg-parsechangelog -S Version | sed -E 's/^[0-9]+://; s/-[^-]*$//')
	mv "$w/upstream" "$w/openvswitch-$upver"
	tar -C "$w" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(date -d "$(entry_date)" +%s)" \
		-cJf "$w/openvswitch_$upver.orig.tar.xz" "openvswitch-$upver"
	mv "$w/openvswitch-$upver" "$w/src"
	cp -a "$w/debian-dir/debian" "$w/src/debian"
	rm -rf "$w/debian-dir"
	add_patches "$w/src" "$ROOT/ovs-patches" \
		"the flowcell dp_hash algorithm, selection_method=flowcell, ovs-dpctl set-flowcell/show (Presto)"
	buildpackage "$w/src" ovs nocheck
	mark ovs "${inputs[@]}"
}

tools_version() {
	local d h
	d=$(git -C "$ROOT" log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null) || d=
	h=$(git -C "$ROOT" log -1 --format=%h 2>/dev/null) || h=
	if [ -n "$d" ]; then echo "0~git$d.$h-1"; else echo "0~local-1"; fi
}

cmd_tools() {
	need_tools
	make -s -C "$ROOT/testbed/tools" dltraffic
	local version w=$WORK/tools/dcnet-tools
	version=$(tools_version)
	rm -rf "$WORK/tools"
	mkdir -p "$w/DEBIAN" "$w/usr/bin" "$w/usr/share/doc/dcnet-tools"
	install -m 0755 -s "$ROOT/testbed/tools/dltraffic" "$w/usr/bin/dltraffic"
	# Presto GRO's netlink client (standard library only), as a command
	sed '1s|^|#!/usr/bin/python3\n|' "$ROOT/dcnet/prestogro.py" >"$w/usr/bin/dcnet-presto-gro"
	chmod 0755 "$w/usr/bin/dcnet-presto-gro"
	cp "$ROOT/LICENSE" "$w/usr/share/doc/dcnet-tools/copyright" 2>/dev/null ||
		echo "GPL-2.0 (testbed/tools/dltraffic.c)" >"$w/usr/share/doc/dcnet-tools/copyright"
	local deps
	deps=$(dpkg-shlibdeps -O -e"$w/usr/bin/dltraffic" 2>/dev/null | sed -n 's/^shlibs:Depends=//p') || deps=
	cat >"$w/DEBIAN/control" <<-EOF
	Package: dcnet-tools
	Version: $version
	Architecture: $(dpkg --print-architecture)
	Maintainer: $MAINT
	Depends: ${deps:-libc6}, python3
	Section: net
	Priority: optional
	Description: dcnet testbed tools
	 dltraffic: the sized-flow traffic generator of the dcnet testbed
	 (servers, per-sender flow schedules, TCP_DEADLINE for D2TCP, per-flow
	 completion times as JSON).
	 dcnet-presto-gro: Presto GRO's settings and counters over the kernel's
	 presto-gro generic netlink family.
	EOF
	rm -rf "$OUT/tools"
	mkdir -p "$OUT/tools"
	SOURCE_DATE_EPOCH=$(date -d "$(entry_date)" +%s) \
		dpkg-deb --root-owner-group -Zxz --build "$w" "$OUT/tools/dcnet-tools_${version}_$(dpkg --print-architecture).deb" >/dev/null
	log "tools: $OUT/tools/dcnet-tools_${version}_$(dpkg --print-architecture).deb"
}

# The repository: every .deb under $OUT (not the -dbg/-dbgsym ones; of the
# kernels, the DCNET_PKG_FLAVOR one only) in one flat directory, indexed and
# described with Origin "dcnet".
cmd_repo() {
	need_tools
	local repo=$OUT/apt flavor=${DCNET_PKG_FLAVOR:-hardware}
	rm -rf "$repo"
	mkdir -p "$repo"
	local n=0 f
	while read -r f; do
		ln "$f" "$repo/" 2>/dev/null || cp "$f" "$repo/"
		n=$((n + 1))
	done < <(find "$OUT" -path "$repo" -prune -o -path "$WORK" -prune \
		-o -type d -name 'kernel-*' ! -name "kernel-$flavor" -prune -o -type f -name '*.deb' \
		! -name '*-dbg_*' ! -name '*-dbgsym_*' -print | sort)
	[ $n -gt 0 ] || die "no packages under $OUT (scripts/packages.sh all)"
	(cd "$repo" && dpkg-scanpackages -m . /dev/null 2>/dev/null >Packages && gzip -9nk Packages)
	(cd "$repo" && apt-ftparchive \
		-o APT::FTPArchive::Release::Origin=dcnet -o APT::FTPArchive::Release::Label=dcnet \
		-o APT::FTPArchive::Release::Suite=bookworm-dcnet -o APT::FTPArchive::Release::Codename=bookworm-dcnet \
		-o APT::FTPArchive::Release::Description="dcnet kernel, iproute2, Open vSwitch and tools" \
		release . >Release)
	if [ -n "${DCNET_APT_KEY:-}" ]; then
		(cd "$repo" && gpg --batch --yes -u "$DCNET_APT_KEY" --clearsign -o InRelease Release &&
			gpg --batch --yes -u "$DCNET_APT_KEY" -abs -o Release.gpg Release &&
			gpg --batch --yes --export "$DCNET_APT_KEY" >dcnet-archive-keyring.gpg)
		signed="Signed-By: /usr/share/keyrings/dcnet-archive-keyring.gpg"
	else
		signed="Trusted: yes"
	fi
	cat >"$repo/dcnet.sources" <<-EOF
	# /etc/apt/sources.list.d/dcnet.sources: this repository, copied to
	# /var/lib/dcnet/apt on the host (testbed/physical, role repo).
	Types: deb
	URIs: file:/var/lib/dcnet/apt
	Suites: ./
	$signed
	EOF
	cat >"$repo/dcnet.pref" <<-EOF
	# /etc/apt/preferences.d/dcnet.pref: this repository's packages win
	# over Debian's, also after a Debian update of the same package whose
	# version then sorts above ours.
	Package: *
	Pin: release o=dcnet
	Pin-Priority: 990
	EOF
	log "repository: $repo ($n packages, $([ -n "${DCNET_APT_KEY:-}" ] && echo "signed with $DCNET_APT_KEY" || echo "unsigned: trusted=yes"))"
}

# "NAME VERSION" of what this tree packages, from the installed source
# packages (no build, no unpacking): the kernel's release and package
# version, iproute2's and openvswitch's package versions, dcnet-tools'.
cmd_versions() {
	local k i o
	k=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) || k=
	[ -n "$k" ] || die "linux-source-6.12 is not installed"
	echo "linux-image-${k%%-*}-dcnet $k$SUFFIX"
	i=$(dpkg-query -W -f='${Version}' iproute2 2>/dev/null) || i=
	[ -z "$i" ] || echo "iproute2 $i$SUFFIX"
	o=$(dpkg-query -W -f='${Version}' openvswitch-source 2>/dev/null) || o=
	[ -z "$o" ] || echo "openvswitch-switch $o$SUFFIX"
	echo "dcnet-tools $(tools_version)"
}

mkdir -p "$OUT"
case "${1:-all}" in
all)
	t0=$SECONDS
	cmd_kernel "${DCNET_PKG_FLAVOR:-hardware}"
	cmd_iproute2
	cmd_ovs
	cmd_tools
	cmd_repo
	log "all packages in $((SECONDS - t0)) s"
	;;
kernel) cmd_kernel "${2:-hardware}" ;;
iproute2) cmd_iproute2 ;;
ovs) cmd_ovs ;;
tools) cmd_tools ;;
repo) cmd_repo ;;
versions) cmd_versions ;;
*) echo "usage: $0 [all|kernel [FLAVOR]|iproute2|ovs|tools|repo|versions]" >&2; exit 2 ;;
esac
