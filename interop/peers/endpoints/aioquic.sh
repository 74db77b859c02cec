#!/usr/bin/env bash
# aioquic (interop/peers/aioquic/peer.py, run as $QNC_PEERS/aioquic-peer in
# the virtualenv interop/peers/setup-third-party.sh installs) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, QLOGDIR, SSLKEYLOGFILE, and the overrides QNC_WWW,
# QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address), QNC_SESSION,
# QNC_PEERS (where the peers are installed).
set -euo pipefail

NAME=aioquic
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PEER="${AIOQUIC_PEER:-$PEERS/aioquic-peer}"
need "$PEER"

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
    exec_peer_server "$PEER" "${flags[@]}" "${logs[@]}"
}

# One client run fetching the given URLs in parallel on one connection.
fetch() {
    local trust
    trust_args --ca
    local args=()
    for u in "$@"; do args+=(--url "$u"); done
    # shellcheck disable=SC2086
    "$PEER" client "${trust[@]}" --download-dir "$DOWNLOADS" --fail --timeout 300 \
        "${logs[@]}" "${extra[@]}" ${CLIENT_PARAMS:-} "${args[@]}"
}

# fetch, then a check that the first connection stored a session ticket.
fetch_checking_ticket() {
    fetch "$@"
    [[ -s "$SESSION" ]] || { echo "aioquic endpoint: the server sent no session ticket" >&2; exit 1; }
}

run_client() {
    extra=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt | retry) ;;
    keyupdate) extra+=(--key-update) ;;
    *) unsupported ;;
    esac
    read_urls
    case "$TESTCASE" in
    multiconnect) for u in "${urls[@]}"; do fetch "$u"; done ;;
    resumption | zerortt)
        # The first file on a full handshake (saving the ticket), the rest
        # on one resumed connection, in 0-RTT for zerortt.
        rm -f "$SESSION"
        extra+=(--session-file "$SESSION")
        [[ "$TESTCASE" == zerortt ]] && extra+=(--early-data)
        fetch_first_then_rest fetch_checking_ticket
        ;;
    *) fetch "${urls[@]}" ;;
    esac
}

endpoint_main
