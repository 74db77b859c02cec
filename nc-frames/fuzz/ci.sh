#!/usr/bin/env bash
# Short run of every fuzz target, for `make test` (FUZZ_SECS each, 10 by
# default). cargo-fuzz needs a nightly toolchain: without one this says so
# and skips; the stable smoke runs in nc-frames/tests/fuzz_smoke.rs always run.
# A crash fails the run and leaves its input in nc-frames/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
secs=${FUZZ_SECS:-10}
if ! cargo +nightly --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || true
fi
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: SKIPPED (no nightly toolchain; rustup toolchain install nightly)"
    exit 0
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$(cd ../.. && pwd)/target/fuzz}
for t in $(cargo +nightly fuzz list); do
    # New inputs go to a scratch directory; the seed corpus, if any, is read.
    scratch=$(mktemp -d)
    seeds=()
    [ -d "corpus/$t" ] && seeds=("corpus/$t")
    echo "fuzz: $t for ${secs}s"
    log=$(mktemp)
    status=0
    cargo +nightly fuzz run "$t" "$scratch" "${seeds[@]}" -- \
        -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|Done)' "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -40 "$log"
        echo "fuzz: $t FAILED (input in nc-frames/fuzz/artifacts/$t)"
        exit 1
    fi
    rm -rf "$scratch" "$log"
done
