#!/usr/bin/env bash
# aioquic (interop/peers/aioquic/peer.py, run as $QNC_PEERS/aioquic-peer in
# the virtualenv interop/peers/setup-third-party.sh installs) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, QLOGDIR, SSLKEYLOGFILE, and the overrides QNC_WWW,
# QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address), QNC_SESSION,
# QNC_PEERS (where the peers are installed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEERS="${QNC_PEERS:-$HERE/../../../target/third-party}"
PEER="${AIOQUIC_PEER:-$PEERS/aioquic-peer}"
WWW="${QNC_WWW:-/www}"
DOWNLOADS="${QNC_DOWNLOADS:-/downloads}"
CERTS="${QNC_CERTS:-/certs}"
LISTEN="${QNC_LISTEN:-0.0.0.0:443}"
SESSION="${QNC_SESSION:-/tmp/aioquic-session.bin}"

unsupported() {
    echo "aioquic endpoint: test case '$TESTCASE' is not supported as $ROLE${1:+: $1}" >&2
    exit 127
}

[[ -x "$PEER" ]] || { echo "aioquic endpoint: $PEER missing (run interop/peers/setup-third-party.sh)" >&2; exit 1; }

logs=()
if [[ -n "${QLOGDIR:-}" ]]; then mkdir -p "$QLOGDIR" && logs+=(--qlog-dir "$QLOGDIR"); fi
if [[ -n "${SSLKEYLOGFILE:-}" ]]; then logs+=(--keylog "$SSLKEYLOGFILE"); fi

run_server() {
    # Session tickets always (the resumption case needs them too); with
    # them aioquic also accepts 0-RTT on a resumed connection.
    local flags=(--session-tickets)
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt) ;;
    retry) flags+=(--retry) ;;
    *) unsupported ;;
    esac
    # shellcheck disable=SC2086 # word splitting of SERVER_PARAMS is intended
    exec "$PEER" server --addr "$LISTEN" --cert "$CERTS/cert.pem" --key "$CERTS/priv.key" \
        --root "$WWW" "${flags[@]}" "${logs[@]}" ${SERVER_PARAMS:-}
}

# One client run fetching the given URLs in parallel on one connection.
fetch() {
    local trust=()
    if [[ -r "$CERTS/ca.pem" ]]; then trust=(--ca "$CERTS/ca.pem"); fi
    local args=()
    for u in "$@"; do args+=(--url "$u"); done
    # shellcheck disable=SC2086
    "$PEER" client "${trust[@]}" --download-dir "$DOWNLOADS" --fail --timeout 300 \
        "${logs[@]}" "${extra[@]}" ${CLIENT_PARAMS:-} "${args[@]}"
}

run_client() {
    extra=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt | retry) ;;
    keyupdate) extra+=(--key-update) ;;
    *) unsupported ;;
    esac
    read -r -a urls <<<"${REQUESTS:-}"
    [[ ${#urls[@]} -gt 0 ]] || { echo "aioquic endpoint: REQUESTS is empty" >&2; exit 1; }
    mkdir -p "$DOWNLOADS"
    case "$TESTCASE" in
    multiconnect) for u in "${urls[@]}"; do fetch "$u"; done ;;
    resumption | zerortt)
        # The first file on a full handshake (saving the ticket), the rest
        # on one resumed connection, in 0-RTT for zerortt.
        rm -f "$SESSION"
        extra+=(--session-file "$SESSION")
        [[ "$TESTCASE" == zerortt ]] && extra+=(--early-data)
        fetch "${urls[0]}"
        [[ -s "$SESSION" ]] || { echo "aioquic endpoint: the server sent no session ticket" >&2; exit 1; }
        if [[ ${#urls[@]} -gt 1 ]]; then fetch "${urls[@]:1}"; fi
        ;;
    *) fetch "${urls[@]}" ;;
    esac
}

: "${ROLE:?}" "${TESTCASE:?}"
case "$ROLE" in
server) run_server ;;
client) run_client ;;
*) exit 1 ;;
esac
