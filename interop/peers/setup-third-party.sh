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
#   DEST/s2n-quic-peer   interop/peers/s2n-quic, built the same way (aws-lc-sys: needs
#                        cmake and a C compiler)
#   DEST/kwik/           kwik and flupke jars from Maven Central (versions and sha256
#                        pinned below) and interop/peers/kwik/KwikPeer.java compiled
#                        with javac; DEST/kwik-peer runs it (needs a JDK 11+:
#                        apt-get installs openjdk-17-jdk-headless when javac is missing)
#   /usr/sbin/gtlsserver, /usr/bin/gtlsclient
#                        ngtcp2's examples (Debian's ngtcp2-server and
#                        ngtcp2-client, apt-get installed when missing: root only)
#
#   interop/peers/setup-third-party.sh [DEST]
#
# Each part is redone only when its inputs change (a stamp file holds a hash
# of the requirements / Go sources / jar list and the interpreter / toolchain
# version).
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

# --- quinn, s2n-quic ------------------------------------------------------
# Separate cargo projects (own Cargo.lock, empty [workspace]), built where
# `make peers` builds the quinn peer; each redone when its sources,
# Cargo.toml / Cargo.lock or the cargo version change.
CARGO="${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}"
[[ -x "$CARGO" ]] || die "no cargo (Rust toolchain) on PATH or in ~/.cargo/bin for the quinn and s2n-quic peers"
PEERS_TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
[[ "$PEERS_TARGET" == /* ]] || PEERS_TARGET="$PWD/$PEERS_TARGET"
PEERS_TARGET="$PEERS_TARGET/peers-build"
CARGO_VERSION="$("$CARGO" --version)" || die "'$CARGO --version' failed (the Rust peers need a working cargo)"
# build_rust_peer DIR BIN: cargo build --release --locked of DIR, installed as DEST/BIN.
build_rust_peer() {
    local dir="$1" bin="$2" want
    want="$(hash_of "$dir/Cargo.toml" "$dir/Cargo.lock" "$dir"/src/*.rs) $CARGO_VERSION"
    if [[ ! -x "$DEST/$bin" || "$(cat "$DEST/$bin.stamp" 2>/dev/null)" != "$want" ]]; then
        log "building $bin into $DEST (cargo build --release --locked, CARGO_TARGET_DIR=$PEERS_TARGET)"
        (cd "$dir" && CARGO_TARGET_DIR="$PEERS_TARGET" "$CARGO" build --release --locked) ||
            die "cargo build --release --locked of $dir failed: is crates.io reachable, and does Cargo.lock match Cargo.toml?"
        cp -f "$PEERS_TARGET/release/$bin" "$DEST/$bin.tmp" || die "cargo built no $PEERS_TARGET/release/$bin"
        mv -f "$DEST/$bin.tmp" "$DEST/$bin"
        echo "$want" >"$DEST/$bin.stamp"
    fi
}
build_rust_peer "$HERE/quinn" quinn-peer
build_rust_peer "$HERE/s2n-quic" s2n-quic-peer

# --- kwik + flupke ----------------------------------------------------------
# kwik 0.10.8 (its 0.10.9 needs agent15 3.2, which Maven Central lacks) and
# the flupke release built against it, with their runtime dependencies.
MAVEN="${MAVEN_REPO:-https://repo1.maven.org/maven2}"
KWIK_JARS=(
    "tech/kwik/kwik/0.10.8/kwik-0.10.8.jar 25d8cc16cdb40a506f6c3da846d99e05c5af7cffdf0e9a66176c36519a33a8f9"
    "tech/kwik/agent15/3.1/agent15-3.1.jar cd49fd26cceedb78c3863dbaad7d769211dda62bf2d5fc22b25af695be882397"
    "at/favre/lib/hkdf/2.0.0/hkdf-2.0.0.jar 65aa13f71a1a8b9cac439504af213d761fef9b002b6d06f06c16e50f86ec422b"
    "com/io7m/repackage/io/whitfin/io.whitfin.siphash/2.0.1/io.whitfin.siphash-2.0.1.jar 95b6678908a4d69c0ef6510e960fae2d38511a57e13fc1b4408c658162c3a07f"
    "tech/kwik/flupke/0.9.4/flupke-0.9.4.jar 8270b3f18213f0e0edea193ce88a7bb10a03fcdcaf75ec2ca748b05ce5337638"
    "tech/kwik/qpack/2.0.1/qpack-2.0.1.jar fb19ffc5367b394c22edd57c3106e8070407fe153e0d64966f7950f5ed3ac638"
)
if ! command -v javac >/dev/null; then
    [[ "$(id -u)" == 0 ]] || die "no javac for the kwik peer: apt-get install openjdk-17-jdk-headless (as root)"
    log "installing openjdk-17-jdk-headless with apt-get (javac for the kwik peer)"
    jdk_install() {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 \
            openjdk-17-jdk-headless </dev/null >&2
    }
    jdk_install || { apt-get update -q </dev/null >&2 && jdk_install; } ||
        die "apt-get install openjdk-17-jdk-headless failed: is Debian's archive reachable?"
fi
KW="$HERE/kwik"
KWD="$DEST/kwik"
want="$(hash_of "$KW/KwikPeer.java") $(printf '%s\n' "${KWIK_JARS[@]}" | sha256sum | cut -d' ' -f1) $(javac -version 2>&1)"
if [[ ! -x "$DEST/kwik-peer" || "$(cat "$KWD/.qnc-stamp" 2>/dev/null)" != "$want" ]]; then
    log "fetching kwik and flupke from $MAVEN and compiling the kwik peer into $KWD"
    rm -rf "$KWD" && mkdir -p "$KWD/classes"
    cp_jars=()
    for entry in "${KWIK_JARS[@]}"; do
        read -r path sum <<<"$entry"
        jar="$KWD/${path##*/}"
        curl -fsS --retry 3 -m 120 -o "$jar" "$MAVEN/$path" || die "download of $MAVEN/$path failed: is Maven Central reachable?"
        echo "$sum  $jar" | sha256sum -c --quiet - >&2 || die "$jar: sha256 differs from the pinned one"
        cp_jars+=("$jar")
    done
    classpath="$(IFS=:; echo "${cp_jars[*]}")"
    javac -nowarn -d "$KWD/classes" -cp "$classpath" "$KW/KwikPeer.java" || die "javac of $KW/KwikPeer.java failed"
    cat >"$DEST/kwik-peer.tmp" <<SH
#!/bin/sh
exec java -cp "$KWD/classes:$classpath" KwikPeer "\$@"
SH
    chmod +x "$DEST/kwik-peer.tmp"
    mv -f "$DEST/kwik-peer.tmp" "$DEST/kwik-peer"
    echo "$want" >"$KWD/.qnc-stamp"
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

log "ready in $DEST ($((SECONDS - t0)) s): aioquic-peer, quic-go-peer, quinn-peer, s2n-quic-peer, kwik-peer, gtlsserver, gtlsclient"
