#!/usr/bin/env bash
# ngtcp2's example programs (Debian's gtlsserver / gtlsclient) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, QLOGDIR, SSLKEYLOGFILE, and the overrides QNC_WWW,
# QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address), QNC_SESSION.
set -euo pipefail

NAME=ngtcp2
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SERVER_BIN="${NGTCP2_SERVER:-/usr/sbin/gtlsserver}"
CLIENT_BIN="${NGTCP2_CLIENT:-/usr/bin/gtlsclient}"

logs=()
[[ -n "${QLOGDIR:-}" ]] && mkdir -p "$QLOGDIR" && logs+=(--qlog-dir "$QLOGDIR")

run_server() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt) ;;
    retry) flags+=(-V) ;;
    *) unsupported ;;
    esac
    local host="${LISTEN%:*}" port="${LISTEN##*:}"
    host="${host#[}"
    host="${host%]}"
    # shellcheck disable=SC2086
    exec "$SERVER_BIN" -q -d "$WWW" "${flags[@]}" "${logs[@]}" ${SERVER_PARAMS:-} \
        "$host" "$port" "$CERTS/priv.key" "$CERTS/cert.pem"
}

# One client run on one connection: gtlsclient HOST PORT URL...
fetch() {
    local authority="${1#https://}"
    authority="${authority%%/*}"
    local host="${authority%:*}" port="${authority##*:}"
    host="${host#[}"
    host="${host%]}"
    # shellcheck disable=SC2086
    "$CLIENT_BIN" -q --download "$DOWNLOADS" --exit-on-all-streams-close --timeout 30s \
        "${logs[@]}" "${extra[@]}" ${CLIENT_PARAMS:-} "$host" "$port" "$@"
}

run_client() {
    extra=()
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt | retry) ;;
    keyupdate) extra+=(--key-update 1ms) ;;
    *) unsupported ;;
    esac
    read_urls
    case "$TESTCASE" in
    multiconnect) for u in "${urls[@]}"; do fetch "$u"; done ;;
    resumption | zerortt)
        rm -f "$SESSION" "$SESSION.tp"
        extra+=(--session-file "$SESSION" --tp-file "$SESSION.tp")
        [[ "$TESTCASE" == resumption ]] && extra+=(--disable-early-data)
        fetch_first_then_rest fetch
        ;;
    *) fetch "${urls[@]}" ;;
    esac
}

endpoint_main
