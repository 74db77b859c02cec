#!/usr/bin/env bash
# kwik + flupke (interop/peers/kwik/KwikPeer.java, installed as
# $QNC_PEERS/kwik-peer by interop/peers/setup-third-party.sh) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, SSLKEYLOGFILE (client: kwik writes the TLS secrets), and
# the overrides QNC_WWW, QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server
# address), QNC_PEERS. QLOGDIR is
# ignored (kwik's qlog is a separate module, not on Maven Central).
# QNC_SESSION is not needed: the resumption / 0-RTT client makes both
# connections in one process and keeps the session ticket in memory.
set -euo pipefail

NAME=kwik
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PEER="${KWIK_PEER:-$PEERS/kwik-peer}"
need "$PEER"

run_server() {
    local flags=()
    case "$TESTCASE" in
    # HTTP/3 (flupke's server); session tickets are always issued and
    # 0-RTT accepted on a resumed connection.
    handshake | transfer | http3 | multiconnect | resumption | zerortt) ;;
    # kwik's server config retryRequired: a Retry for every Initial
    # without a valid token.
    retry) flags+=(--retry) ;;
    *) unsupported ;;
    esac
    exec_peer_server "$PEER" "${flags[@]}"
}

run_client() {
    local flags=()
    case "$TESTCASE" in
    # HTTP/3 for every case (flupke over kwik): all URLs on one
    # connection, up to 64 requests in parallel.
    handshake | transfer | http3 | retry) ;;
    # One connection per URL, one after the other.
    multiconnect) flags+=(--multiconnect) ;;
    # The first URL on connection 1, the rest on connection 2 resuming its
    # session ticket.
    resumption) flags+=(--resume) ;;
    zerortt) unsupported "flupke's HTTP/3 client cannot send requests in 0-RTT" ;;
    # QuicClientConnectionImpl.updateKeys after the first 100 kB.
    keyupdate) flags+=(--key-update) ;;
    *) unsupported ;;
    esac
    read_urls
    local trust
    trust_args --ca --insecure
    [[ -n "${SSLKEYLOGFILE:-}" ]] && flags+=(--keylog "$SSLKEYLOGFILE")
    # kwik matches the certificate against DNS names only, never an IP
    # address: for a URL to 127.0.0.1 or [::1] it checks (and sends as SNI)
    # "localhost", which the contract's certificates carry, and sends the
    # packets to the address.
    case "${urls[0]}" in
    https://127.0.0.1:* | https://\[::1\]:*) flags+=(--server-name localhost) ;;
    esac
    # shellcheck disable=SC2086
    exec "$PEER" client "${trust[@]}" --outdir "$DOWNLOADS" "${flags[@]}" \
        ${CLIENT_PARAMS:-} "${urls[@]}"
}

endpoint_main
