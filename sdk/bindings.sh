#!/usr/bin/env bash
# Builds the SDK library and writes its bindings under target/sdk/:
# python/ (qnc.py + libqnc_sdk.so), kotlin/, swift/, include/qnc.h.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
OUT=${QNC_SDK_OUT:-target/sdk}
LIB=target/debug/libqnc_sdk.so
$CARGO build -p qnc-sdk
( cd sdk/bindgen && CARGO_TARGET_DIR=../../target/sdk-bindgen $CARGO build -q )
GEN=target/sdk-bindgen/debug/qnc-sdk-bindgen
for lang in python kotlin swift; do
    $GEN generate --no-format --library "$LIB" --language "$lang" --out-dir "$OUT/$lang" >/dev/null
done
$GEN c-header "$OUT/include/qnc.h"
cp "$LIB" "$OUT/python/"
echo "sdk: bindings in $OUT (python, kotlin, swift, include/qnc.h)"
