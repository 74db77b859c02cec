#!/usr/bin/env bash
# The SDK's tests from the languages themselves: Python (pytest), C (under
# valgrind's leak checker) and Kotlin on the JVM (Maven). Installs what is
# missing (valgrind from Debian, pytest from PyPI); Maven fetches Kotlin.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
if ! command -v valgrind >/dev/null; then
    apt-get install -y -q valgrind >/dev/null || { apt-get update -q && apt-get install -y -q valgrind; }
fi
python3 -c 'import pytest' 2>/dev/null || python3 -m pip install -q pytest
$CARGO build -p quic-nc-examples --bin qnc-server --bin qnc-certs -p interop --bin linkem
bash sdk/bindings.sh
exec python3 -m pytest -q -p no:cacheprovider sdk/tests "$@"
