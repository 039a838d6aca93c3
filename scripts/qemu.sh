#!/usr/bin/env bash
# Build qemu-system-x86_64 from Debian's qemu 7.2 source package (the
# version of the installed binary, with Debian's own patches) with
# qemu-patches/ applied: TCG, KVM and 9p, the x86_64 system target only.
# The result is $BUILD/qemu/build/qemu-system-x86_64; it uses Debian's
# installed firmware (/usr/share/qemu, seabios, ipxe).  The system's QEMU
# is left alone.  Rebuilds only when the patches change.
#
#   scripts/qemu.sh          build if needed, print nothing when current
#   scripts/qemu.sh path     print the binary's path (build first if needed)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
SRC=$BUILD/qemu-src
TREE=$BUILD/qemu
BIN=$TREE/build/qemu-system-x86_64
log() { echo "qemu: $*" >&2; }
die() { echo "qemu: $*" >&2; exit 1; }
. "$ROOT/scripts/debsrc.sh"

stamp=$(cat "$ROOT"/qemu-patches/*.patch | sha256sum | cut -d' ' -f1)
if [ -x "$BIN" ] && [ "$(cat "$TREE/.dcnet-stamp" 2>/dev/null)" = "$stamp" ]; then
	[ "${1:-}" = path ] && echo "$BIN"
	exit 0
fi

# The source package (scripts/debsrc.sh), the version of the installed
# qemu-system-x86 when the index has it
if ! ls "$SRC"/qemu_*.dsc >/dev/null 2>&1; then
	log "fetching the qemu source package"
	debsrc_fetch "$SRC" qemu "$(dpkg-query -W -f='${Source:Version}' qemu-system-x86 2>/dev/null || true)"
	ls "$SRC"/qemu_*.dsc >/dev/null 2>&1 || die "apt-get source qemu failed"
fi
for t in meson ninja pkg-config; do
	command -v $t >/dev/null || die "$t missing (run 'make deps')"
done
pkg-config --exists glib-2.0 pixman-1 || die "glib or pixman headers missing (run 'make deps')"

rm -rf "$TREE"
# dpkg-source applies Debian's patches (debian/patches) as the package does
dpkg-source -q -x --no-check "$(ls "$SRC"/qemu_*.dsc | tail -1)" "$TREE" >/dev/null 2>&1 ||
	die "dpkg-source -x failed"
for p in "$ROOT"/qemu-patches/*.patch; do
	patch -d "$TREE" -p1 -s --no-backup-if-mismatch <"$p" || die "$(basename "$p") does not apply"
done
log "building qemu-system-x86_64 $(cat "$TREE/VERSION") (about 5 min on two CPUs)"
mkdir -p "$TREE/build"
(cd "$TREE/build" &&
	../configure --target-list=x86_64-softmmu --without-default-features \
		--enable-tcg --enable-kvm --enable-virtfs --enable-attr --enable-cap-ng \
		--disable-docs --disable-werror --disable-install-blobs \
		--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu \
		--with-git-submodules=ignore --with-pkgversion="Debian $(cat ../debian/changelog | head -1 | grep -o '([^)]*)' | tr -d '()') + dcnet" \
		>configure.log 2>&1 &&
	ninja -j"$(nproc)" qemu-system-x86_64 >build.log 2>&1) ||
	{ tail -30 "$TREE/build/configure.log" "$TREE/build/build.log" 2>/dev/null >&2; die "build failed"; }
# Run from its build tree, QEMU looks for firmware under build/qemu-bundle
# (the install tree meson stages) before anything else and finds none
# there; without it, the configured path (Debian's firmware) is used as is.
rm -rf "$TREE/build/qemu-bundle"
"$BIN" -L help | grep -qx /usr/share/seabios || die "the built QEMU does not search Debian's firmware"
echo "$stamp" >"$TREE/.dcnet-stamp"
log "built $BIN"
[ "${1:-}" = path ] && echo "$BIN"
exit 0
