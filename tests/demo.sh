#!/usr/bin/env bash
# `make demo`: fetch the pinned llama.cpp and its prebuilt libraries (tests/fixture.sh), make a tiny model,
# profile a llama-completion run with ggprof and print the report.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
echo "demo: preparing llama.cpp v0.4.0 and the test models (the first time builds llama.cpp: ~10-25 min)" >&2
fixture=$(bash "$ROOT/tests/fixture.sh") || { echo "demo: tests/fixture.sh failed (its messages are above)" >&2; exit 1; }
eval "$(sed 's/^/export /' <<< "$fixture")"
OUT=$ROOT/build/demo
mkdir -p "$OUT"
GGPROF=$ROOT/build/bin/ggprof
echo "demo: ggprof record -o $OUT/llama.db -- llama-completion -m $(basename "$GGUF_DENSE") -n 32" >&2
"$GGPROF" record -o "$OUT/llama.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "The history of the printing press" -n 32 -t 2 --no-warmup -no-cnv -s 1 > "$OUT/llama-completion.log" 2>&1 ||
    { tail -n 20 "$OUT/llama-completion.log" >&2; exit 1; }
tail -n 1 "$OUT/llama-completion.log" >&2
"$GGPROF" report "$OUT/llama.db"
echo
"$GGPROF" top-ops "$OUT/llama.db" -n 8
echo
"$GGPROF" rollup "$OUT/llama.db" --by layer
"$GGPROF" export "$OUT/llama.db" --html "$OUT/llama.html" --chrome "$OUT/llama.trace.json"
cat << MSG

The trace: $OUT/llama.db (SQLite) and $OUT/llama.json.gz (version-3 JSON); a timeline to open in a browser:
$OUT/llama.html; for Perfetto UI: $OUT/llama.trace.json. Try:
  $GGPROF query $OUT/llama.db "SELECT name, count(*), sum(duration_ns)/1e6 AS ms FROM records GROUP BY 1 ORDER BY 3 DESC LIMIT 5"
MSG
