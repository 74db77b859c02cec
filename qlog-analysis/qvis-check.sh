#!/bin/bash
# Loads a qlog-qvis export in qvis itself, built from its public sources,
# in headless Chromium, and checks what a person would see: the file loads
# without errors, the sequence diagram draws both endpoints' packets and
# the congestion graph draws the server's.
#
# usage: qlog-analysis/qvis-check.sh QVIS_SRC QLOG_SRC EXPORT.qlog [WORK_DIR]
#
#   QVIS_SRC    a checkout of github.com/quiclog/qvis
#   QLOG_SRC    a checkout of github.com/quiclog/qlog: its TypeScript/ folder
#               is the @quictools/qlog-schema package qvis depends on, which
#               is no longer on the npm registry (404), so it is built here
#   EXPORT.qlog what `qlog-qvis` wrote (a client and a server trace)
#   WORK_DIR    where qvis is built and the screenshots go (default
#               target/qvis-check); a second run reuses the build
#
# Needs node/npm (the npm registry), python3 and chromium. Neither source
# tree is modified: both are copied into WORK_DIR.
set -euo pipefail

if [ $# -lt 3 ]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
QVIS_SRC=$(realpath "$1")
QLOG_SRC=$(realpath "$2")
EXPORT=$(realpath "$3")
WORK=$(realpath -m "${4:-target/qvis-check}")
mkdir -p "$WORK"

for tool in node npm python3 chromium; do
    command -v "$tool" >/dev/null || { echo "qvis-check: $tool is needed" >&2; exit 2; }
done
[ -f "$QVIS_SRC/visualizations/package.json" ] || { echo "qvis-check: $QVIS_SRC is not a qvis checkout" >&2; exit 2; }
[ -f "$QLOG_SRC/TypeScript/package.json" ] || { echo "qvis-check: $QLOG_SRC is not a qlog checkout" >&2; exit 2; }

# 1. The schema package: TypeScript sources compiled in place (qvis imports
#    '@quictools/qlog-schema/draft-16/QLog', a path inside the package).
if [ ! -f "$WORK/qvis/dist/index.html" ]; then
    rm -rf "$WORK/qlog-schema" "$WORK/qvis"
    cp -r "$QLOG_SRC/TypeScript" "$WORK/qlog-schema"
    (cd "$WORK/qlog-schema" && npx -y -p typescript@3.9 tsc --declaration --target es2017 \
        --module commonjs --esModuleInterop --outDir . index.ts draft-01/QLog.ts draft-16/QLog.ts)
    # 2. qvis, its dependency pointed at that package; webpack 4 needs
    #    OpenSSL's legacy provider on Node 17 and later.
    mkdir -p "$WORK/qvis"
    (cd "$QVIS_SRC/visualizations" && tar cf - --exclude=node_modules --exclude=dist \
        --exclude=public/standalone_data .) | (cd "$WORK/qvis" && tar xf -)
    sed -i 's#"@quictools/qlog-schema": "[^"]*"#"@quictools/qlog-schema": "file:../qlog-schema"#' \
        "$WORK/qvis/package.json"
    (cd "$WORK/qvis" && npm install --no-audit --no-fund --loglevel=error \
        && NODE_OPTIONS=--openssl-legacy-provider npx vue-cli-service build)
fi

# 3. Serve qvis and the export from one origin (qvis fetches ?file=URL).
SITE="$WORK/site"
rm -rf "$SITE" && cp -r "$WORK/qvis/dist" "$SITE" && cp "$EXPORT" "$SITE/export.qlog"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$SITE" >"$WORK/http.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 50); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/')" 2>/dev/null && break
    sleep 0.1
done

# 4. Each view in the browser: DOM, console and a screenshot. qvis logs
#    through console.log (the whole file once: "successfully loaded");
#    an exception shows as "Uncaught".
FLAGS=(--headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=20000)
status=0
fail() { echo "qvis-check: $*" >&2; status=1; }
for view in sequence congestion; do
    url="http://127.0.0.1:$PORT/?file=http://127.0.0.1:$PORT/export.qlog#/$view"
    chromium "${FLAGS[@]}" --enable-logging=stderr --v=0 --dump-dom "$url" \
        >"$WORK/$view.html" 2>"$WORK/$view.log" || true
    grep -a "CONSOLE" "$WORK/$view.log" | grep -av "successfully loaded file directly" \
        | cut -c1-300 >"$WORK/$view.console" || true
    chromium "${FLAGS[@]}" --window-size=1400,1000 --screenshot="$WORK/$view.png" "$url" \
        >/dev/null 2>&1 || true
    grep -qi "uncaught\|error loading\|could not" "$WORK/$view.console" \
        && fail "$view: errors in the console ($WORK/$view.console)"
    grep -q "QlogLoaderV2:fromDraft02" "$WORK/$view.console" \
        || fail "$view: qvis did not load the file as draft-02 ($WORK/$view.console)"
    [ -s "$WORK/$view.png" ] || fail "$view: no screenshot"
done
# The sequence diagram draws an arrow (SVG lines) per packet and labels
# them; the congestion graph renders into two canvases.
lines=$(grep -o '<line' "$WORK/sequence.html" | wc -l)
labels=$(grep -o '>initial : [0-9]*<\|>1RTT : [0-9]*<' "$WORK/sequence.html" | wc -l)
canvases=$(grep -o '<canvas' "$WORK/congestion.html" | wc -l)
grep -q "SequenceDiagramD3Renderer:render" "$WORK/sequence.console" || fail "sequence: not rendered"
grep -q "CongestionGraphRenderer:render" "$WORK/congestion.console" || fail "congestion: not rendered"
[ "$lines" -ge 100 ] && [ "$labels" -ge 10 ] || fail "sequence: $lines lines, $labels packet labels"
[ "$canvases" -ge 2 ] || fail "congestion: $canvases canvases"
echo "qvis-check: sequence diagram $lines lines, $labels packet labels; congestion graph $canvases canvases"
echo "qvis-check: screenshots $WORK/sequence.png $WORK/congestion.png"
[ $status -eq 0 ] && echo "qvis-check: ok"
exit $status
