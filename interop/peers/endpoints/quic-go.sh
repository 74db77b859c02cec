#!/usr/bin/env bash
# quic-go (interop/peers/quic-go, built by interop/peers/setup-third-party.sh
# into $QNC_PEERS/quic-go-peer) behind the quic-interop-runner's endpoint
# contract, for nc-interop. Same variables as docker/run_endpoint.sh:
# ROLE, TESTCASE, REQUESTS, SERVER_PARAMS / CLIENT_PARAMS, QLOGDIR and
# SSLKEYLOGFILE (read by quic-go-peer itself), and the overrides QNC_WWW,
# QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address), QNC_PEERS.
# QNC_SESSION is not used: quic-go's tls.ClientSessionCache lives in
# memory, so resumption / 0-RTT run as one client process (-resume, -0rtt)
# that opens both connections.
set -euo pipefail

NAME=quic-go
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BIN="${QUIC_GO_PEER:-$PEERS/quic-go-peer}"

# Test cases nc-interop does not run (chacha20, v2, ecn, rebinding,
# connectionmigration, ...; see nc-interop --list) are not wired up and
# exit 127 like unknown ones, although quic-go has QUIC v2 and ECN.

run_server() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption) ;;
    # quic.Transport.VerifySourceAddress answering true: a Retry for every
    # Initial without a valid token.
    retry) flags+=(-retry) ;;
    # quic.Config.Allow0RTT (crypto/tls issues the session tickets).
    zerortt) flags+=(-0rtt) ;;
    *) unsupported "not a test case this script knows" ;;
    esac
    need "$BIN"
    # shellcheck disable=SC2086 # word splitting of SERVER_PARAMS is intended
    exec "$BIN" server -addr "$LISTEN" -root "$WWW" -cert "$CERTS/cert.pem" \
        -key "$CERTS/priv.key" "${flags[@]}" ${SERVER_PARAMS:-}
}

run_client() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | retry) ;;
    # quic-go initiates the first key update by itself, once 100 packets
    # went either way with the first 1-RTT keys (its FirstKeyUpdateInterval):
    # the 3 MB download is far more.
    keyupdate) ;;
    multiconnect) flags+=(-multiconnect) ;;
    # One process, two connections sharing the in-memory session cache;
    # the client fails unless connection 2 resumed (and, for zerortt, unless
    # the server accepted its 0-RTT requests).
    resumption) flags+=(-resume) ;;
    zerortt) flags+=(-0rtt) ;;
    *) unsupported "not a test case this script knows" ;;
    esac
    need "$BIN"
    read_urls
    local trust
    trust_args -ca
    # shellcheck disable=SC2086
    exec "$BIN" client "${trust[@]}" -outdir "$DOWNLOADS" "${flags[@]}" \
        ${CLIENT_PARAMS:-} "${urls[@]}"
}

endpoint_main
