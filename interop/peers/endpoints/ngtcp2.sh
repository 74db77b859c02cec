#!/usr/bin/env bash
# ngtcp2's example programs (Debian's gtlsserver / gtlsclient) behind the
# quic-interop-runner's endpoint contract, for nc-interop. Same variables
# as docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, SERVER_PARAMS /
# CLIENT_PARAMS, QLOGDIR, SSLKEYLOGFILE, and the overrides QNC_WWW,
# QNC_DOWNLOADS, QNC_CERTS, QNC_LISTEN (server address), QNC_SESSION.
set -euo pipefail

SERVER_BIN="${NGTCP2_SERVER:-/usr/sbin/gtlsserver}"
CLIENT_BIN="${NGTCP2_CLIENT:-/usr/bin/gtlsclient}"
WWW="${QNC_WWW:-/www}"
DOWNLOADS="${QNC_DOWNLOADS:-/downloads}"
CERTS="${QNC_CERTS:-/certs}"
LISTEN="${QNC_LISTEN:-0.0.0.0:443}"
SESSION="${QNC_SESSION:-/tmp/ngtcp2-session}"

unsupported() {
    echo "ngtcp2 endpoint: test case '$TESTCASE' is not supported as $ROLE" >&2
    exit 127
}

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
    read -r -a urls <<<"${REQUESTS:-}"
    [[ ${#urls[@]} -gt 0 ]] || { echo "ngtcp2 endpoint: REQUESTS is empty" >&2; exit 1; }
    mkdir -p "$DOWNLOADS"
    case "$TESTCASE" in
    multiconnect) for u in "${urls[@]}"; do fetch "$u"; done ;;
    resumption | zerortt)
        rm -f "$SESSION" "$SESSION.tp"
        extra+=(--session-file "$SESSION" --tp-file "$SESSION.tp")
        [[ "$TESTCASE" == resumption ]] && extra+=(--disable-early-data)
        fetch "${urls[0]}"
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
