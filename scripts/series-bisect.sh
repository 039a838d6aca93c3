#!/usr/bin/env bash
# Check that the series is bisectable: after each patch of
# kernel-patches/series (with the new files kernel-patches/new-files gives
# it), every kernel object the series touched so far compiles, and every
# symbol those objects need is defined by them or by the rest of the
# kernel.  Not a whole build per patch (too slow for this host): the
# objects the series touches are rebuilt, and symbols outside them are
# taken from a finished release build (vmlinux and modules) minus what the
# series defines.
#
#   scripts/series-bisect.sh [WORKDIR]       (about 10 min with ccache)
#
# Needs a release build in $BUILD/obj-release (make kernel-release) for
# its .config and symbols; WORKDIR (default $BUILD/bisect) gets a copy
# of the pristine tree and an object directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
WORK=${1:-$BUILD/bisect}
REL=$BUILD/obj-release
PRISTINE=$BUILD/pristine
[ -f "$REL/System.map" ] || { echo "series-bisect: no release build in $REL (make kernel-release)" >&2; exit 1; }
"$ROOT/scripts/kernel.sh" version >/dev/null   # unpacks the pristine tree

patches=$(grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/series" | awk '{print $1}')
newfiles() {   # "repo-path tree-path" of the new files of patch $1
	grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/new-files" |
		awk -v p="$1" '$1 == p { print $2, ($3 == "" ? $2 : $3) }'
}

rm -rf "$WORK"
mkdir -p "$WORK/obj"
SRC=$WORK/linux OBJ=$WORK/obj
echo "series-bisect: copying the pristine tree to $SRC"
mkdir -p "$SRC"
cp -a "$PRISTINE/." "$SRC/"
cp "$REL/.config" "$OBJ/.config"
mk() { make -s -C "$SRC" O="$OBJ" CC="ccache gcc" -j"$(nproc)" "$@"; }

# What the finished series defines, and what the rest of the kernel does.
defined() { nm --defined-only "$@" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
# Every object the whole series touches, rebuilt after each patch where
# its source exists by then (and the release configuration builds it).
touched=$(
	for p in $patches; do
		grep -E '^\+\+\+ b/.*\.c$' "$ROOT/kernel-patches/$p" | sed 's#^+++ b/##'
		newfiles "$p" | awk '{ print $2 }' | grep '\.c$' || true
	done | sed 's#\.c$#.o#' | sort -u)
n=0
for p in $patches; do
	n=$((n + 1))
	patch -s -p1 -d "$SRC" <"$ROOT/kernel-patches/$p"
	while read -r src dst; do
		mkdir -p "$(dirname "$SRC/$dst")"
		cp "$ROOT/$src" "$SRC/$dst"
	done < <(newfiles "$p")
	[ "$n" = 1 ] && { mk olddefconfig >/dev/null; mk prepare; }
	# Only objects the release configuration builds.
	objs=$(for o in $touched; do [ -f "$REL/$o" ] && [ -f "$SRC/${o%.o}.c" ] && echo "$o"; done; true)
	if ! mk -k $objs >"$WORK/make-$n.log" 2>&1; then
		echo "series-bisect: FAIL after $p: compile errors ($WORK/make-$n.log):"
		grep -m 5 -E 'error' "$WORK/make-$n.log" || true
		echo "$p" >>"$WORK/compile-failed"
	fi
	( cd "$OBJ" && defined $objs ) >"$WORK/def-$n"
	( cd "$OBJ" && nm --undefined-only $objs 2>/dev/null | awk '$1 == "U" { print $2 }' | sort -u ) >"$WORK/undef-$n"
	echo "$p" >"$WORK/patch-$n"
done

# The rest of the kernel: the finished build's symbols minus the series'.
{ awk '{ print $3 }' "$REL/System.map"; find "$REL" -name '*.ko' -exec nm --defined-only {} + 2>/dev/null |
	awk 'NF == 3 { print $3 }'; } | sort -u | comm -23 - "$WORK/def-$n" >"$WORK/kernel-syms"

bad=0
[ -f "$WORK/compile-failed" ] && bad=1
for i in $(seq 1 "$n"); do
	missing=$(sort -u "$WORK/def-$i" "$WORK/kernel-syms" | comm -13 - "$WORK/undef-$i")
	if [ -n "$missing" ]; then
		echo "series-bisect: FAIL after $(cat "$WORK/patch-$i"): undefined:" $missing
		bad=1
	else
		echo "series-bisect: ok after $(cat "$WORK/patch-$i")"
	fi
done
exit $bad
