#!/usr/bin/env bash
# Installs the third-party QUIC peers of examples/tests/third_party.rs into a
# private directory (default: <target>/third-party), idempotently:
#
#   DEST/venv/           a virtualenv with aioquic (interop/peers/aioquic/requirements.txt)
#   DEST/aioquic-peer    runs interop/peers/aioquic/peer.py in that virtualenv
#   DEST/quic-go-peer    interop/peers/quic-go built with `go build`
#   DEST/quinn-peer      interop/peers/quinn built with `cargo build --release --locked`
#                        (in <target>/peers-build, like `make peers`; needs cargo and
#                        crates.io or a filled ~/.cargo/registry)
#   /usr/sbin/gtlsserver, /usr/bin/gtlsclient
#                        ngtcp2's examples (Debian's ngtcp2-server and
#                        ngtcp2-client, apt-get installed when missing: root only)
#
#   interop/peers/setup-third-party.sh [DEST]
#
# Each part is redone only when its inputs change (a stamp file holds a hash
# of the requirements / Go sources and the interpreter / toolchain version).
# Needs python3 with the venv module, Go, and PyPI plus the Go module proxy
# the first time (and Debian's archive for ngtcp2). Concurrent runs serialize on DEST/.lock. Environment:
# PYTHON (default python3), GO (default go on PATH, else /usr/local/go/bin/go).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
DEST="${1:-${CARGO_TARGET_DIR:-$REPO/target}/third-party}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"

die() { echo "setup-third-party: $*" >&2; exit 1; }
log() { echo "setup-third-party: $*" >&2; }

exec 9>"$DEST/.lock"
if command -v flock >/dev/null; then flock 9; fi

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
t0=$SECONDS

# --- aioquic -------------------------------------------------------------
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || die "no $PYTHON on PATH (the aioquic peer needs Python 3.9+ with venv)"
REQ="$HERE/aioquic/requirements.txt"
want="$(hash_of "$REQ") $("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
VENV="$DEST/venv"
if [[ "$(cat "$VENV/.qnc-stamp" 2>/dev/null)" != "$want" ]]; then
    log "installing aioquic into $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" ||
        die "'$PYTHON -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$REQ" ||
        die "pip install -r $REQ failed: is PyPI reachable?"
    "$VENV/bin/python" -c 'import aioquic, aioquic.h3.connection' ||
        die "aioquic does not import in $VENV"
    echo "$want" >"$VENV/.qnc-stamp"
fi
cat >"$DEST/aioquic-peer.tmp" <<SH
#!/bin/sh
exec "$VENV/bin/python" "$HERE/aioquic/peer.py" "\$@"
SH
chmod +x "$DEST/aioquic-peer.tmp"
mv -f "$DEST/aioquic-peer.tmp" "$DEST/aioquic-peer"

# --- quic-go -------------------------------------------------------------
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[[ -x "$GO" ]] || die "no Go toolchain (go on PATH or /usr/local/go/bin/go) for the quic-go peer"
QG="$HERE/quic-go"
want="$(hash_of "$QG/main.go" "$QG/go.mod" "$QG/go.sum") $("$GO" env GOVERSION)"
if [[ ! -x "$DEST/quic-go-peer" || "$(cat "$DEST/quic-go-peer.stamp" 2>/dev/null)" != "$want" ]]; then
    log "building quic-go-peer into $DEST"
    (cd "$QG" && "$GO" build -o "$DEST/quic-go-peer.tmp" .) ||
        die "go build of $QG failed: is the Go module proxy reachable?"
    mv -f "$DEST/quic-go-peer.tmp" "$DEST/quic-go-peer"
    echo "$want" >"$DEST/quic-go-peer.stamp"
fi

# --- quinn ---------------------------------------------------------------
# A separate cargo project (own Cargo.lock, empty [workspace]), built where
# `make peers` builds it; redone when its sources, Cargo.toml / Cargo.lock
# or the cargo version change.
CARGO="${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}"
[[ -x "$CARGO" ]] || die "no cargo (Rust toolchain) on PATH or in ~/.cargo/bin for the quinn peer"
QN="$HERE/quinn"
QN_TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
[[ "$QN_TARGET" == /* ]] || QN_TARGET="$PWD/$QN_TARGET"
QN_TARGET="$QN_TARGET/peers-build"
QN_CARGO_VERSION="$("$CARGO" --version)" || die "'$CARGO --version' failed (the quinn peer needs a working cargo)"
want="$(hash_of "$QN/Cargo.toml" "$QN/Cargo.lock" "$QN"/src/*.rs) $QN_CARGO_VERSION"
if [[ ! -x "$DEST/quinn-peer" || "$(cat "$DEST/quinn-peer.stamp" 2>/dev/null)" != "$want" ]]; then
    log "building quinn-peer into $DEST (cargo build --release --locked, CARGO_TARGET_DIR=$QN_TARGET)"
    (cd "$QN" && CARGO_TARGET_DIR="$QN_TARGET" "$CARGO" build --release --locked) ||
        die "cargo build --release --locked of $QN failed: is crates.io reachable, and does Cargo.lock match Cargo.toml?"
    cp -f "$QN_TARGET/release/quinn-peer" "$DEST/quinn-peer.tmp" ||
        die "cargo built no $QN_TARGET/release/quinn-peer"
    mv -f "$DEST/quinn-peer.tmp" "$DEST/quinn-peer"
    echo "$want" >"$DEST/quinn-peer.stamp"
fi

# --- ngtcp2 --------------------------------------------------------------
have_ngtcp2() { [[ -x /usr/sbin/gtlsserver && -x /usr/bin/gtlsclient ]]; }
if ! have_ngtcp2; then
    [[ "$(id -u)" == 0 ]] ||
        die "ngtcp2's gtlsserver/gtlsclient are missing: apt-get install ngtcp2-server ngtcp2-client (as root)"
    log "installing ngtcp2-server ngtcp2-client with apt-get"
    apt_install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 \
            ngtcp2-server ngtcp2-client </dev/null >&2
    }
    apt_install || { apt-get update -q </dev/null >&2 && apt_install; } ||
        die "apt-get install ngtcp2-server ngtcp2-client failed: is Debian's archive reachable?"
    have_ngtcp2 || die "ngtcp2-server/ngtcp2-client installed no /usr/sbin/gtlsserver, /usr/bin/gtlsclient"
fi

log "ready in $DEST ($((SECONDS - t0)) s): aioquic-peer, quic-go-peer, gtlsserver, gtlsclient"
