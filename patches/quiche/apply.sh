#!/usr/bin/env bash
# Builds the patched quiche tree that the workspace's [patch.crates-io] points at.
#
# 1. checks the native build prerequisites of quiche/BoringSSL (installs them
#    with apt when running as root);
# 2. has cargo itself fetch the pinned quiche .crate and verifies its sha256;
# 3. extracts it into .quiche/quiche-$VERSION (git-ignored), commits the
#    pristine tree as `pristine`, and applies patches/quiche/*.patch with git am.
#
# Re-running is cheap: a stamp of the series' hash skips work when nothing changed.
set -euo pipefail

VERSION=0.30.0
SHA256=52b35a721a2a56797347929745fa783fc99e680d9484b80324ce40106b75493a

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest="$root/.quiche/quiche-$VERSION"
stamp="$dest/.series-stamp"

series_hash() {
    (echo "$VERSION $SHA256"; cat "$here"/*.patch 2>/dev/null || true) | sha256sum | cut -d' ' -f1
}

check_prereqs() {
    local missing=()
    command -v cc >/dev/null || missing+=(gcc)
    command -v c++ >/dev/null || missing+=(g++)
    command -v cmake >/dev/null || missing+=(cmake)
    command -v git >/dev/null || missing+=(git)
    command -v patch >/dev/null || missing+=(patch)
    # bindgen (boring-sys) needs libclang and clang's resource headers.
    if ! compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null \
        || ! compgen -G '/usr/lib/llvm-*/lib/clang/*/include/stddef.h' >/dev/null; then
        missing+=(libclang-dev clang)
    fi
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "quiche: installing build prerequisites: ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "quiche: missing build prerequisites; run: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
}

fetch_crate() {
    local tmp crate
    tmp=$(mktemp -d)
    mkdir -p "$tmp/src"
    printf '[package]\nname = "quiche-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nquiche = "=%s"\n[workspace]\n' \
        "$VERSION" > "$tmp/Cargo.toml"
    : > "$tmp/src/lib.rs"
    cargo fetch --quiet --manifest-path "$tmp/Cargo.toml" >&2
    rm -rf "$tmp"
    crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/quiche-$VERSION.crate 2>/dev/null | head -1)
    [ -n "$crate" ] || { echo "quiche: cargo did not fetch quiche-$VERSION.crate" >&2; exit 1; }
    echo "$SHA256  $crate" | sha256sum --check --quiet - >&2 \
        || { echo "quiche: checksum mismatch for $crate" >&2; exit 1; }
    echo "$crate"
}

want=$(series_hash)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
if [ -d "$dest/.git" ] && [ -n "$(git -C "$dest" status --porcelain --untracked-files=no)" ]; then
    echo "quiche: $dest has uncommitted edits; export them (patches/quiche/export.sh) or discard them" >&2
    exit 1
fi

check_prereqs
crate=$(fetch_crate)
work="$root/.quiche/.work-$$"
rm -rf "$work"
mkdir -p "$work"
tar -xzf "$crate" -C "$work"
g() { git -C "$work/quiche-$VERSION" -c user.name=quic-nc -c user.email=quic-nc@localhost "$@"; }
g init -q
g add -A
g commit -q -m "quiche $VERSION (pristine)"
g tag pristine
shopt -s nullglob
patches=("$here"/*.patch)
if [ ${#patches[@]} -gt 0 ]; then
    g am -q --keep-cr "${patches[@]}" || { echo "quiche: patch series does not apply" >&2; exit 1; }
fi
echo "$want" > "$work/quiche-$VERSION/.series-stamp"
echo .series-stamp >> "$work/quiche-$VERSION/.git/info/exclude"
rm -rf "$dest"
mv "$work/quiche-$VERSION" "$dest"
rm -rf "$work"
echo "quiche: $VERSION with ${#patches[@]} patch(es) ready in ${dest#$root/}" >&2
