#!/usr/bin/env bash
# Regenerates patches/quiche/*.patch from the commits on top of `pristine`
# in .quiche/quiche-<version> (the developer workflow: edit there, commit, export).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=$(ls -d "$root"/.quiche/quiche-*/ | head -1)
rm -f "$here"/*.patch
git -C "$dest" format-patch -q --no-signature --zero-commit --no-numbered pristine..HEAD -o "$here"
# The tree now matches the series: refresh the stamp so apply.sh keeps it.
VERSION=$(basename "$dest" | sed 's/^quiche-//')
SHA256=$(grep '^SHA256=' "$here/apply.sh" | cut -d= -f2)
(echo "$VERSION $SHA256"; cat "$here"/*.patch 2>/dev/null || true) | sha256sum | cut -d' ' -f1 > "$dest/.series-stamp"
ls "$here"/*.patch
