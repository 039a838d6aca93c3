#!/usr/bin/env bash
# Build the patched kernel.
#
#   scripts/kernel.sh prepare            pristine tree + new files + kernel-patches/ -> build/linux
#   scripts/kernel.sh config  FLAVOR     build/obj-FLAVOR/.config (FLAVOR: debug | release)
#   scripts/kernel.sh build   FLAVOR     bzImage + modules in build/obj-FLAVOR
#   scripts/kernel.sh version            the kernel version of the source package
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
			<"$ROOT/kernel-patches/$p" >"$BUILD/patch.log" 2>&1; then
			cat "$BUILD/patch.log" >&2
			die "kernel-patches/$p does not apply to Linux $(kernel_version)"
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
	local stamp
	stamp=$(patch_stamp)
	if [ ! -f "$TREE/.dcnet-stamp" ] || [ "$(cat "$TREE/.dcnet-stamp")" != "$stamp" ]; then
		local staging=$BUILD/staging
		rm -rf "$staging"
		# Hard links are safe: patch(1) writes a new file and renames it.
		cp -al "$PRISTINE" "$staging"
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

vng_fragment() {
	local out=$1 cfg
	cfg=$VENV/bin/virtme-configkernel
	[ -x "$cfg" ] || cfg=$(command -v virtme-configkernel || true)
	[ -n "$cfg" ] || die "virtme-configkernel not found (run 'make deps')"
	(cd "$TREE" && "$cfg" --defconfig --dry-run) | grep -E '^(CONFIG_|# CONFIG_)' >"$out.tmp"
	mv "$out.tmp" "$out"
}

cmd_config() {
	local flavor=${1:?flavor}
	local obj=$BUILD/obj-$flavor
	[ -f "$ROOT/kconfig/$flavor.config" ] || die "unknown flavor $flavor"
	mkdir -p "$obj"
	vng_fragment "$BUILD/vng.config"
	local frags=("$BUILD/vng.config" "$ROOT/kconfig/base.config" "$ROOT/kconfig/$flavor.config")
	local stamp
	stamp=$(cat "${frags[@]}" "$ROOT/Kconfig" "$TREE/.dcnet-stamp" | sha256sum | cut -d' ' -f1)
	if [ -f "$obj/.config" ] && [ -f "$obj/.dcnet-config-stamp" ] &&
		[ "$(cat "$obj/.dcnet-config-stamp")" = "$stamp" ]; then
		return
	fi
	log "configuring $flavor kernel"
	make -s -C "$TREE" O="$obj" x86_64_defconfig >/dev/null
	(cd "$obj" && "$TREE/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "${frags[@]}" >"$obj/merge.log" 2>&1) ||
		{ cat "$obj/merge.log" >&2; die "merge_config failed"; }
	make -s -C "$TREE" O="$obj" olddefconfig >/dev/null
	# Every option our fragments ask for must have survived olddefconfig.
	local bad=0 line name want got
	while read -r line; do
		case "$line" in
		CONFIG_*=*) name=${line%%=*}; want=${line#*=} ;;
		"# CONFIG_"*" is not set") name=${line#\# }; name=${name%% *}; want=n ;;
		*) continue ;;
		esac
		got=$(grep -E "^$name=|^# $name is not set" "$obj/.config" | head -1)
		case "$got" in
		"$name=$want") ;;
		"# $name is not set") [ "$want" = n ] || { log "$name: wanted $want, got n"; bad=1; } ;;
		"") [ "$want" = n ] || { log "$name: wanted $want, option unknown or unmet dependency"; bad=1; } ;;
		*) log "$name: wanted $want, got ${got#*=}"; bad=1 ;;
		esac
	done < <(cat "$ROOT/kconfig/base.config" "$ROOT/kconfig/$flavor.config")
	[ $bad = 0 ] || die "the $flavor configuration does not hold what kconfig/ asks for"
	echo "$stamp" >"$obj/.dcnet-config-stamp"
}

cmd_build() {
	local flavor=${1:?flavor}
	local obj=$BUILD/obj-$flavor
	cmd_prepare
	cmd_config "$flavor"
	local cc=gcc
	if command -v ccache >/dev/null; then
		cc="ccache gcc"
		export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=1
		export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
	fi
	log "building $flavor kernel (Linux $(kernel_version)) in $obj with -j$JOBS"
	local t0=$SECONDS
	make -C "$TREE" O="$obj" -j"$JOBS" CC="$cc" \
		KBUILD_BUILD_TIMESTAMP='2024-01-01' KBUILD_BUILD_USER=dcnet KBUILD_BUILD_HOST=dcnet \
		bzImage modules >"$obj/build.log" 2>&1 ||
		{ grep -E 'error|Error' "$obj/build.log" | head -40 >&2; tail -20 "$obj/build.log" >&2; die "$flavor build failed (log: $obj/build.log)"; }
	grep -E ': warning:' "$obj/build.log" | grep -E 'net/(ipv4|ipv6|sched|openvswitch|core)' >&2 || true
	log "built $(cat "$obj/include/config/kernel.release") in $((SECONDS - t0)) s: $obj/arch/x86/boot/bzImage"
}

mkdir -p "$BUILD"
if [ -z "${DCNET_KERNEL_LOCKED:-}" ] && [ "${1:-}" != version ]; then
	export DCNET_KERNEL_LOCKED=1
	exec flock "$BUILD/.lock" "$0" "$@"
fi

case "${1:-}" in
prepare) cmd_prepare ;;
config) cmd_prepare; cmd_config "${2:?flavor}" ;;
build) cmd_build "${2:?flavor}" ;;
version) ensure_pristine; kernel_version ;;
*) echo "usage: $0 prepare|config FLAVOR|build FLAVOR|version" >&2; exit 2 ;;
esac
