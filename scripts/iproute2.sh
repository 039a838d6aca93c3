#!/usr/bin/env bash
# Build tc and ss from Debian's iproute2 6.1 source with iproute2-patches/
# applied.  The results are $BUILD/iproute2/tc/tc and $BUILD/iproute2/misc/ss;
# the system's are left alone (unpatched ones keep working on the patched
# kernel).  Rebuilds only when
# the patches change.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
SRC=$BUILD/iproute2-src
TREE=$BUILD/iproute2
log() { echo "iproute2: $*"; }
die() { echo "iproute2: $*" >&2; exit 1; }
. "$ROOT/scripts/debsrc.sh"

stamp=$(cat "$ROOT"/iproute2-patches/*.patch | sha256sum | cut -d' ' -f1)
if [ -x "$TREE/tc/tc" ] && [ -x "$TREE/misc/ss" ] && [ "$(cat "$TREE/.dcnet-stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

# The source package (scripts/debsrc.sh)
if ! ls "$SRC"/iproute2_*.orig.tar.* >/dev/null 2>&1; then
	log "fetching the iproute2 source package"
	debsrc_fetch "$SRC" iproute2
	ls "$SRC"/iproute2_*.orig.tar.* >/dev/null 2>&1 || die "apt-get source iproute2 failed"
fi

rm -rf "$TREE"
mkdir -p "$TREE"
tar -C "$TREE" --strip-components=1 -xf "$(ls "$SRC"/iproute2_*.orig.tar.* | head -1)"
for p in "$ROOT"/iproute2-patches/*.patch; do
	patch -d "$TREE" -p1 -F0 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply"
done
log "building tc and ss ($(cat "$TREE/include/version.h" 2>/dev/null | grep -o '"[^"]*"' | head -1))"
(cd "$TREE" && ./configure >configure.log 2>&1 &&
	make -j"$(nproc)" SUBDIRS="lib tc misc" >build.log 2>&1) || { tail -20 "$TREE/build.log" >&2; die "build failed"; }
echo "$stamp" >"$TREE/.dcnet-stamp"
log "built $TREE/tc/tc and $TREE/misc/ss"
