#!/usr/bin/env bash
# s2n-quic (interop/peers/s2n-quic: s2n-quic + s2n-quic-h3 + h3, built as
# $QNC_PEERS/s2n-quic-peer by interop/peers/setup-third-party.sh) behind the
# quic-interop-runner's endpoint contract, for nc-interop: server role
# only (the peer has no client). Same variables as docker/run_endpoint.sh:
# ROLE, TESTCASE, SERVER_PARAMS, and the overrides QNC_WWW, QNC_CERTS,
# QNC_LISTEN (server address), QNC_PEERS. QLOGDIR and SSLKEYLOGFILE are
# ignored (the peer is built without s2n-quic's event providers).
set -euo pipefail

NAME=s2n-quic
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PEER="${S2N_QUIC_PEER:-$PEERS/s2n-quic-peer}"

run_server() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect) ;;
    # An endpoint limiter answering Outcome::retry: a Retry for every
    # attempt without a valid token.
    retry) flags+=(--retry) ;;
    # s2n-quic resumes sessions only with its s2n-tls provider, not with
    # rustls (aws/s2n-quic#2099): no session tickets, no 0-RTT.
    resumption | zerortt) unsupported "s2n-quic with rustls has no session resumption" ;;
    *) unsupported ;;
    esac
    need "$PEER"
    exec_peer_server "$PEER" "${flags[@]}"
}

run_client() {
    unsupported "the s2n-quic peer is a server only"
}

endpoint_main
