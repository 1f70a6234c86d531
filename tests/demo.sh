#!/usr/bin/env bash
# `make demo`: install node-llama-cpp 3.21.1 and its prebuilt CPU libraries from npm (nothing of llama.cpp is
# compiled), make a tiny random-weight model (tests/fixture.sh --demo), profile a node-llama-cpp completion with
# ggprof (samples/node/script.mjs) and print the report, the top ops and the time per layer; write the HTML
# timeline and the Chrome trace.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOKENS=32
echo "demo: preparing node-llama-cpp 3.21.1's prebuilt libraries and a test model (the first time: a few minutes)" >&2
fixture=$(bash "$ROOT/tests/fixture.sh" --demo) ||
    { echo "demo: tests/fixture.sh --demo failed (its messages are above)" >&2; exit 1; }
eval "$(sed 's/^/export /' <<< "$fixture")"
OUT=$ROOT/build/demo
mkdir -p "$OUT"
GGPROF=$ROOT/build/bin/ggprof
# node resolves node-llama-cpp from the script's own folder: the script runs from the npm project's.
cp "$ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-demo.mjs"
echo "demo: ggprof record -o $OUT/node.db -- node script.mjs $(basename "$GGUF_DENSE") $TOKENS" >&2
(cd "$NODE_PROJECT_DIR" && "$GGPROF" record -o "$OUT/node.db" -- node ggprof-demo.mjs "$GGUF_DENSE" "$TOKENS") \
    > "$OUT/node.log" 2>&1 || { tail -n 20 "$OUT/node.log" >&2; exit 1; }
grep '^generated' "$OUT/node.log" >&2 || true
"$GGPROF" report "$OUT/node.db"
echo
"$GGPROF" top-ops "$OUT/node.db" -n 8
echo
"$GGPROF" rollup "$OUT/node.db" --by layer
"$GGPROF" export "$OUT/node.db" --html "$OUT/node.html" --chrome "$OUT/node.trace.json"
cat << MSG

The trace: $OUT/node.db (SQLite) and $OUT/node.json.gz (version-3 JSON); a timeline to open in a browser:
$OUT/node.html; for Perfetto UI: $OUT/node.trace.json. Try:
  $GGPROF query $OUT/node.db "SELECT name, count(*), sum(duration_ns)/1e6 AS ms FROM records GROUP BY 1 ORDER BY 3 DESC LIMIT 5"
The from-source llama.cpp builds (shared, and static with LTO) are the tests' fixture: make test.
MSG
