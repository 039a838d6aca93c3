#!/usr/bin/env bash
# Export the patchset as a git format-patch series against the pristine
# Debian linux-source-6.12 tree: kernel-patches/ in the order of
# kernel-patches/series, each with the new files that kernel-patches/new-files
# assigns to it.  Usage: scripts/series.sh OUTDIR [WORKDIR]
#
# The author of every patch, and its one Signed-off-by, is the person who
# exports: DCNET_AUTHOR_NAME and DCNET_AUTHOR_EMAIL when set, else this
# repository's git configuration (git config user.name / user.email).
# Without either the export fails.  Signed-off-by lines the patches in
# kernel-patches/ carry are replaced by that one.  Subjects are
# "[PATCH] ...", unnumbered, as in kernel-patches/, so the export and the
# sources carry the same headers and messages.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?output directory}
BUILD=${BUILD:-${XDG_CACHE_HOME:-$HOME/.cache}/dcnet/build}
WORK=${2:-$BUILD/series-work}
PRISTINE=$BUILD/pristine

git_config() { git -C "$ROOT" config --get "$1" 2>/dev/null || true; }
name=${DCNET_AUTHOR_NAME:-$(git_config user.name)}
email=${DCNET_AUTHOR_EMAIL:-$(git_config user.email)}
if [ -z "$name" ] || [ -z "$email" ]; then
	cat >&2 <<-MSG
	series: no author for the patches (name: '${name}', email: '${email}').
	  Set them in git:  git config user.name 'Your Name'; git config user.email you@example.com
	  or for one export: DCNET_AUTHOR_NAME='Your Name' DCNET_AUTHOR_EMAIL=you@example.com make series
	MSG
	exit 1
fi
author="$name <$email>"

"$ROOT/scripts/kernel.sh" version >/dev/null   # unpacks the pristine tree
version=$("$ROOT/scripts/kernel.sh" version)

patches=$(grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/series" | awk '{print $1}')

# A repository holding the pristine version of every file the series
# touches (enough for git am, and fast): the whole tree is not needed.
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
git init -q
git config user.name "$name"
git config user.email "$email"
for p in $patches; do
	grep -E '^(---|\+\+\+) [ab]/' "$ROOT/kernel-patches/$p" | sed -E 's#^(---|\+\+\+) [ab]/##' | sort -u
done | sort -u | while read -r f; do
	[ -f "$PRISTINE/$f" ] || continue
	mkdir -p "$(dirname "$f")"
	cp "$PRISTINE/$f" "$f"
done
git add -A
# Fixed dates (the pristine tree's, then each patch's own): the same
# sources and author export to the same bytes, commit ids included.
base_date="@$(stat -c %Y "$PRISTINE/Makefile") +0000"
GIT_AUTHOR_DATE=$base_date GIT_COMMITTER_DATE=$base_date \
	git commit -q -m "Linux $version (Debian linux-source-6.12, pristine)"
base=$(git rev-parse HEAD)

msg=$(git rev-parse --git-dir)/dcnet-msg
for p in $patches; do
	git am -q --keep-cr --committer-date-is-author-date "$ROOT/kernel-patches/$p" ||
		{ git am --abort; echo "series: $p does not apply with git am" >&2; exit 1; }
	while read -r owner src dst; do
		[ "$owner" = "$p" ] || continue
		dst=${dst:-$src}
		mkdir -p "$(dirname "$dst")"
		cp "$ROOT/$src" "$dst"
		git add "$dst"
	done < <(grep -v -E '^[[:space:]]*(#|$)' "$ROOT/kernel-patches/new-files")
	# The exporting author, with exactly one Signed-off-by.
	git log -1 --format=%B | sed '/^Signed-off-by:/d' >"$msg"
	GIT_COMMITTER_DATE=$(git log -1 --format=%aD) \
		git commit -q --amend --author="$author" --cleanup=whitespace --signoff -F "$msg"
done
rm -f "$msg"

# Every new file must belong to some patch.
for f in $(cd "$ROOT" && find net include Documentation -type f 2>/dev/null) Kconfig; do
	awk '{print $2}' "$ROOT/kernel-patches/new-files" | grep -qxF "$f" ||
		{ echo "series: $f is not assigned to a patch in kernel-patches/new-files" >&2; exit 1; }
done

rm -rf "$OUT"
mkdir -p "$OUT"
git format-patch -q --no-numbered --no-signature -o "$OUT" "$base"
echo "series: $(ls "$OUT" | wc -l) patches against Linux $version in $OUT, author $author"
