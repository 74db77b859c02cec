#!/usr/bin/env bash
# curl (libcurl's HTTP/3 over ngtcp2/nghttp3, through curl_cffi in the
# virtualenv interop/peers/setup-third-party.sh installs; the script is
# interop/peers/curl/client.py) behind the quic-interop-runner's endpoint
# contract, for nc-interop. Client only. Same variables as
# docker/run_endpoint.sh: ROLE, TESTCASE, REQUESTS, CLIENT_PARAMS, QLOGDIR,
# SSLKEYLOGFILE (both read by libcurl itself), and the overrides
# QNC_DOWNLOADS, QNC_CERTS, QNC_PEERS (where the peers are installed).
set -euo pipefail

NAME=curl
# shellcheck source=interop/peers/endpoints/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
PYTHON="${CURL_PYTHON:-$PEERS/venv/bin/python}"
CLIENT="$ENDPOINTS/../curl/client.py"

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
    read_urls
    local trust
    trust_args --ca --insecure
    need "$PYTHON"
    # shellcheck disable=SC2086 # word splitting of CLIENT_PARAMS is intended
    exec "$PYTHON" "$CLIENT" --download-dir "$DOWNLOADS" "${trust[@]}" "${flags[@]}" \
        ${CLIENT_PARAMS:-} "${urls[@]}"
}

run_server() { unsupported "curl is a client"; }

endpoint_main
