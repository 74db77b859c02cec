#!/usr/bin/env bash
# QUIC-NC as a quic-interop-runner endpoint (qnc-server / qnc-client).
#
# The runner's contract: ROLE (client|server), TESTCASE, REQUESTS (client:
# space-separated URLs), SERVER_PARAMS / CLIENT_PARAMS (extra flags for our
# tools, e.g. "--nc off" or "--cc cubic"), SSLKEYLOGFILE and QLOGDIR (read
# by the tools themselves); /www served, /downloads written, /certs holding
# cert.pem and priv.key (and ca.pem, which the client trusts when present);
# the server listens on UDP 443; an unsupported test case exits 127.
#
# Every fixed path and the network steps can be overridden, so the script
# is tested without Docker (examples/tests/endpoint.rs):
#   QNC_BIN        directory of qnc-client / qnc-server  (/usr/local/bin)
#   QNC_WWW, QNC_DOWNLOADS, QNC_CERTS                     (/www, /downloads, /certs)
#   QNC_LISTEN     server address       ([::]:443, or 0.0.0.0:443 without IPv6)
#   QNC_SETUP      network setup        (/setup.sh of the simulator's endpoint image)
#   QNC_WAIT       client's wait for the simulator (/wait-for-it.sh sim:57832 -s -t 30); empty: no wait
#   QNC_SESSION    client's session ticket file for resumption / 0-RTT
#   QNC_RTT_CACHE  client's per-server RTT file: each connection of a test
#                  case starts its loss timers from the previous one's RTT
set -euo pipefail

BIN="${QNC_BIN:-/usr/local/bin}"
WWW="${QNC_WWW:-/www}"
DOWNLOADS="${QNC_DOWNLOADS:-/downloads}"
CERTS="${QNC_CERTS:-/certs}"
SETUP="${QNC_SETUP:-/setup.sh}"
WAIT="${QNC_WAIT-/wait-for-it.sh sim:57832 -s -t 30}"
SESSION="${QNC_SESSION:-/tmp/qnc-session.bin}"
RTT_CACHE="${QNC_RTT_CACHE:-/tmp/qnc-rtt-cache}"
if [[ -z "${QNC_LISTEN:-}" ]]; then
    if [[ -e /proc/net/if_inet6 ]]; then QNC_LISTEN="[::]:443"; else QNC_LISTEN="0.0.0.0:443"; fi
fi

unsupported() {
    echo "run_endpoint: test case '$TESTCASE' is not supported as $ROLE: $1" >&2
    exit 127
}

# The test cases and what each role needs; see docs/interop.md.
server_flags() {
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption) ;;
    retry) echo "--retry" ;;
    zerortt) echo "--early-data" ;;
    chacha20) unsupported "BoringSSL offers no TLS 1.3 cipher suite selection" ;;
    connectionmigration) unsupported "quiche does not advertise a preferred address" ;;
    v2) unsupported "quiche supports QUIC v1 only" ;;
    ecn) unsupported "quiche neither marks nor reports ECN" ;;
    *) unsupported "unknown test case" ;;
    esac
}

check_client_case() {
    case "$TESTCASE" in
    handshake | transfer | http3 | multiconnect | resumption | zerortt | retry) ;;
    keyupdate) unsupported "quiche cannot initiate a key update (it answers one)" ;;
    chacha20) unsupported "BoringSSL offers no TLS 1.3 cipher suite selection" ;;
    v2) unsupported "quiche supports QUIC v1 only" ;;
    ecn) unsupported "quiche neither marks nor reports ECN" ;;
    *) unsupported "unknown test case" ;;
    esac
}

run_server() {
    local flags
    flags="$(server_flags)"
    if [[ -x "$SETUP" ]]; then "$SETUP"; fi
    # shellcheck disable=SC2086 # word splitting of the flag lists is intended
    exec "$BIN/qnc-server" --listen "$QNC_LISTEN" --root "$WWW" \
        --cert "$CERTS/cert.pem" --key "$CERTS/priv.key" $flags ${SERVER_PARAMS:-}
}

# One client run fetching the given URLs on one connection.
fetch() {
    local trust=(--no-verify)
    if [[ -r "$CERTS/ca.pem" ]]; then trust=(--ca "$CERTS/ca.pem"); fi
    # shellcheck disable=SC2086
    "$BIN/qnc-client" "${trust[@]}" --out "$DOWNLOADS" --rtt-cache "$RTT_CACHE" \
        ${CLIENT_PARAMS:-} "$@"
}

run_client() {
    check_client_case
    if [[ -x "$SETUP" ]]; then "$SETUP"; fi
    # shellcheck disable=SC2086
    if [[ -n "$WAIT" ]]; then $WAIT; fi
    read -r -a urls <<<"${REQUESTS:-}"
    [[ ${#urls[@]} -gt 0 ]] || { echo "run_endpoint: REQUESTS is empty" >&2; exit 1; }
    mkdir -p "$DOWNLOADS"
    # The first connection of a test case measures the RTT afresh.
    rm -f "$RTT_CACHE"
    case "$TESTCASE" in
    multiconnect)
        # One connection per file (handshakeloss, handshakecorruption).
        for u in "${urls[@]}"; do fetch "$u"; done
        ;;
    resumption | zerortt)
        # The first file on a full handshake, the rest on a resumed one
        # (with the requests in 0-RTT for zerortt).
        local early=()
        [[ "$TESTCASE" == zerortt ]] && early=(--early-data)
        rm -f "$SESSION"
        fetch --session-file "$SESSION" "${early[@]}" "${urls[0]}"
        [[ -s "$SESSION" ]] || { echo "run_endpoint: the server sent no session ticket" >&2; exit 1; }
        if [[ ${#urls[@]} -gt 1 ]]; then
            fetch --session-file "$SESSION" "${early[@]}" "${urls[@]:1}"
        fi
        ;;
    *) fetch "${urls[@]}" ;;
    esac
}

: "${ROLE:?ROLE must be client or server}"
: "${TESTCASE:?TESTCASE must be set}"
case "$ROLE" in
server) run_server ;;
client) run_client ;;
*) echo "run_endpoint: ROLE must be client or server, not '$ROLE'" >&2; exit 1 ;;
esac
