# Sourced by the third-party endpoint scripts in this directory: the
# contract's directories with their defaults, and the steps every script
# shares. The sourcing script sets NAME (for messages) and defines
# run_server and run_client (curl: run_client only), then calls
# endpoint_main. docker/run_endpoint.sh stands alone (it must run inside
# the image without this file).

ENDPOINTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEERS="${QNC_PEERS:-$ENDPOINTS/../../../target/third-party}"
WWW="${QNC_WWW:-/www}"
DOWNLOADS="${QNC_DOWNLOADS:-/downloads}"
CERTS="${QNC_CERTS:-/certs}"
LISTEN="${QNC_LISTEN:-0.0.0.0:443}"
SESSION="${QNC_SESSION:-/tmp/$NAME-session.bin}"

# Exit 127: the runner's "test case not supported".
unsupported() {
    echo "$NAME endpoint: test case '$TESTCASE' is not supported as $ROLE${1:+: $1}" >&2
    exit 127
}

# Exits 1 unless the program $1 is installed.
need() {
    [[ -x "$1" ]] || {
        echo "$NAME endpoint: $1 missing (run interop/peers/setup-third-party.sh)" >&2
        exit 1
    }
}

# Reads REQUESTS into the array `urls` and creates the download directory.
read_urls() {
    read -r -a urls <<<"${REQUESTS:-}"
    [[ ${#urls[@]} -gt 0 ]] || { echo "$NAME endpoint: REQUESTS is empty" >&2; exit 1; }
    mkdir -p "$DOWNLOADS"
}

# Runs the client function $1 on the first URL, then on all the others
# (resumption and zerortt: the session ticket is stored in between).
fetch_first_then_rest() {
    "$1" "${urls[0]}"
    if [[ ${#urls[@]} -gt 1 ]]; then "$1" "${urls[@]:1}"; fi
}

# Execs the server of one of our own peer programs (aioquic, kwik, quinn,
# s2n-quic share the command line): $1 is the program, the rest are extra
# flags; SERVER_PARAMS is appended.
exec_peer_server() {
    local peer=$1
    shift
    # shellcheck disable=SC2086 # word splitting of SERVER_PARAMS is intended
    exec "$peer" server --addr "$LISTEN" --root "$WWW" --cert "$CERTS/cert.pem" \
        --key "$CERTS/priv.key" "$@" ${SERVER_PARAMS:-}
}

# Sets the array `trust` to "$1 $CERTS/ca.pem" when the contract's CA file
# is there, else to the remaining arguments (e.g. --insecure, or nothing).
trust_args() {
    local flag=$1
    shift
    trust=("$@")
    if [[ -r "$CERTS/ca.pem" ]]; then trust=("$flag" "$CERTS/ca.pem"); fi
}

endpoint_main() {
    : "${ROLE:?ROLE must be client or server}" "${TESTCASE:?TESTCASE must be set}"
    case "$ROLE" in
    server) run_server ;;
    client) run_client ;;
    *) echo "$NAME endpoint: ROLE must be client or server, not '$ROLE'" >&2; exit 1 ;;
    esac
}
