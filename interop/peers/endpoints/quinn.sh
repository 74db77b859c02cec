#!/usr/bin/env bash
# quinn (quinn + h3 + h3-quinn: interop/peers/quinn, installed as
# $QNC_PEERS/quinn-peer by interop/peers/setup-third-party.sh) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, SSLKEYLOGFILE (read by rustls in both roles), and the
# overrides QNC_WWW, QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address),
# QNC_PEERS. QLOGDIR is ignored: the peer is built without quinn's `qlog`
# feature. QNC_SESSION is not needed: the resumption / 0-RTT client makes
# both connections in one process and keeps the session ticket in memory.
set -euo pipefail

NAME=quinn
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PEER="${QUINN_PEER:-$PEERS/quinn-peer}"
need "$PEER"

run_server() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption) ;;
    # A Retry for every connection attempt that carries no Retry token.
    retry) flags+=(--retry) ;;
    # rustls max_early_data_size = u32::MAX; requests answered in 0.5-RTT.
    zerortt) flags+=(--early-data) ;;
    *) unsupported ;;
    esac
    exec_peer_server "$PEER" "${flags[@]}"
}

run_client() {
    local flags=()
    case "$TESTCASE" in
    # All URLs on one connection, requests in parallel.
    handshake | transfer | http3 | retry) ;;
    # One connection per URL, one after the other.
    multiconnect) flags+=(--multiconnect) ;;
    # The first URL on connection 1, the rest on connection 2 resuming the
    # TLS session (rustls' in-memory ticket cache, one process): without
    # 0-RTT (rustls enable_early_data = false) or with the requests in 0-RTT.
    resumption) flags+=(--resume) ;;
    zerortt) flags+=(--0rtt) ;;
    # quinn::Connection::force_key_update once the handshake is confirmed
    # and the first response head arrived.
    keyupdate) flags+=(--key-update) ;;
    *) unsupported ;;
    esac
    read_urls
    local u
    for u in "${urls[@]}"; do flags+=(--url "$u"); done
    # rustls (webpki) refuses chains with more than six intermediate CAs;
    # the amplificationlimit case's has eight. There, like the runner's
    # quinn image (which verifies nothing), check the handshake signature
    # only; every other case verifies the chain against ca.pem.
    local trust=(--ca "$CERTS/ca.pem") n
    n=$(grep -c -- '-----BEGIN CERTIFICATE-----' "$CERTS/cert.pem" 2>/dev/null || true)
    if (( ${n:-0} > 7 )); then trust=(--insecure); fi
    # shellcheck disable=SC2086
    exec "$PEER" client "${trust[@]}" --outdir "$DOWNLOADS" "${flags[@]}" ${CLIENT_PARAMS:-}
}

endpoint_main
