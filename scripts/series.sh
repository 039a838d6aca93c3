#!/usr/bin/env bash
# Export the patchset as a git format-patch series against the pristine
# Debian linux-source-6.12 tree: kernel-patches/ in the order of
# kernel-patches/series, each with the new files that kernel-patches/new-files
# assigns to it.  Usage: scripts/series.sh OUTDIR [WORKDIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?output directory}
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
WORK=${2:-$BUILD/series-work}
PRISTINE=$BUILD/pristine

"$ROOT/scripts/kernel.sh" version >/dev/null   # unpacks the pristine tree
version=$("$ROOT/scripts/kernel.sh" version)

patches=$(grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/series" | awk '{print $1}')

# A repository holding the pristine version of every file the series
# touches (enough for git am, and fast): the whole tree is not needed.
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
git init -q
git config user.name dcnet
git config user.email dcnet@example.org
for p in $patches; do
	grep -E '^(---|\+\+\+) [ab]/' "$ROOT/kernel-patches/$p" | sed -E 's#^(---|\+\+\+) [ab]/##' | sort -u
done | sort -u | while read -r f; do
	[ -f "$PRISTINE/$f" ] || continue
	mkdir -p "$(dirname "$f")"
	cp "$PRISTINE/$f" "$f"
done
git add -A
git commit -q -m "Linux $version (Debian linux-source-6.12, pristine)"
base=$(git rev-parse HEAD)

for p in $patches; do
	git am -q --keep-cr "$ROOT/kernel-patches/$p" || { git am --abort; echo "series: $p does not apply with git am" >&2; exit 1; }
	added=0
	while read -r owner src dst; do
		[ "$owner" = "$p" ] || continue
		dst=${dst:-$src}
		mkdir -p "$(dirname "$dst")"
		cp "$ROOT/$src" "$dst"
		git add "$dst"
		added=1
	done < <(grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/new-files")
	[ $added = 0 ] || git commit -q --amend --no-edit
done

# Every new file must belong to some patch.
for f in $(cd "$ROOT" && find net include -type f 2>/dev/null) Kconfig; do
	awk '{print $2}' "$ROOT/kernel-patches/new-files" | grep -qxF "$f" ||
		{ echo "series: $f is not assigned to a patch in kernel-patches/new-files" >&2; exit 1; }
done

rm -rf "$OUT"
mkdir -p "$OUT"
git format-patch -q --no-signature -o "$OUT" "$base"
echo "series: $(ls "$OUT" | wc -l) patches against Linux $version in $OUT"
