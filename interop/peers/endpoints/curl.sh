#!/usr/bin/env bash
# curl (libcurl's HTTP/3 over ngtcp2/nghttp3, through curl_cffi in the
# virtualenv interop/peers/setup-third-party.sh installs; the script is
# interop/peers/curl/client.py) behind the quic-interop-runner's endpoint
# contract, for nc-interop. Client only. Same variables as
# docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, CLIENT_PARAMS, QLOGDIR,
# SSLKEYLOGFILE (both read by libcurl itself), and the overrides
# QNC_DOWNLOADS, QNC_CERTS, QNC_PEERS (where the peers are installed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEERS="${QNC_PEERS:-$HERE/../../../target/third-party}"
PYTHON="${CURL_PYTHON:-$PEERS/venv/bin/python}"
CLIENT="$HERE/../curl/client.py"
DOWNLOADS="${QNC_DOWNLOADS:-/downloads}"
CERTS="${QNC_CERTS:-/certs}"

unsupported() {
    echo "curl endpoint: test case '$TESTCASE' is not supported as $ROLE: $1" >&2
    exit 127
}

run_client() {
    local flags=()
    case "$TESTCASE" in
    handshake | transfer | http3 | retry) ;;
    multiconnect) flags+=(--multiconnect) ;;
    resumption) flags+=(--resume) ;;
    # libcurl's 0-RTT (CURLSSLOPT_EARLYDATA) exists for GnuTLS, wolfSSL,
    # quictls and OpenSSL builds, not for BoringSSL, which curl_cffi's
    # libcurl uses: the resumed connection sends no 0-RTT.
    zerortt) unsupported "curl_cffi's libcurl (BoringSSL) cannot send 0-RTT" ;;
    keyupdate) unsupported "libcurl has no way to initiate a QUIC key update" ;;
    *) unsupported "unknown test case" ;;
    esac
    read -r -a urls <<<"${REQUESTS:-}"
    [[ ${#urls[@]} -gt 0 ]] || { echo "curl endpoint: REQUESTS is empty" >&2; exit 1; }
    local trust=(--insecure)
    if [[ -r "$CERTS/ca.pem" ]]; then trust=(--ca "$CERTS/ca.pem"); fi
    [[ -x "$PYTHON" ]] || { echo "curl endpoint: $PYTHON missing (run interop/peers/setup-third-party.sh)" >&2; exit 1; }
    # shellcheck disable=SC2086 # word splitting of CLIENT_PARAMS is intended
    exec "$PYTHON" "$CLIENT" --download-dir "$DOWNLOADS" "${trust[@]}" "${flags[@]}" \
        ${CLIENT_PARAMS:-} "${urls[@]}"
}

: "${ROLE:?}" "${TESTCASE:?}"
case "$ROLE" in
server) unsupported "curl is a client" ;;
client) run_client ;;
*) exit 1 ;;
esac
