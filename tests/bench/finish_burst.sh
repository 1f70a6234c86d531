#!/usr/bin/env bash
# Benchmark (not a test): record's finish on a real workload that records faster than the collector stores:
# llama-bench from the fixture, -p 0 -n TOKENS (512) -r N -t 2, everything recorded at level op (about 76k records
# per 512 tokens, some 600k a second). Per N (default 32, about 2.4M records, and 131, about 10M): the workload's
# seconds, record's finishing seconds (the workload's exit to record's own; the target is under 2 s at any N),
# the seconds until the trace is whole (a `ggprof query`, which waits for a background finish), records offered
# (stored + dropped) against those stored in the database and in the JSON, and whether record finished in the
# background. tests/bench/finish_time.sh is the paced counterpart (a workload offering 250k records a second).
# usage: [TOKENS=N] [RECORD_ARGS=...] tests/bench/finish_burst.sh [GGPROF [N...]]    (run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$(realpath "${1:-$ROOT/build/bin/ggprof}")
shift || true
TOKENS=${TOKENS:-512}
reps=("$@")
[ ${#reps[@]} -gt 0 ] || reps=(32 131)
[ -n "${LLAMA_BIN_DIR:-}" ] && [ -n "${GGUF_DENSE:-}" ] || eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset GGPROF_RECORD_WAIT
now() { date +%s.%N; }
echo "llama-bench -p 0 -n $TOKENS -r N -t 2 at level op ${RECORD_ARGS:-}"
printf '%-5s %10s %10s %10s %8s %10s %11s %8s %11s  %s\n' N offered stored json dropped workload_s finishing_s whole_s background load
for n in "${reps[@]}"; do
    rm -f "$tmp"/t.*
    start=$(now)
    # shellcheck disable=SC2086 # RECORD_ARGS: options, split on spaces
    "$GGPROF" record -o "$tmp/t.db" ${RECORD_ARGS:-} -- sh -c "'$LLAMA_BIN_DIR/llama-bench' -m '$GGUF_DENSE' -p 0 \
        -n $TOKENS -r $n -t 2 > /dev/null 2>&1 && date +%s.%N > '$tmp/exit'" 2> "$tmp/err" || {
        cat "$tmp/err" >&2
        exit 1
    }
    end=$(now)
    stored=$("$GGPROF" query "$tmp/t.db" "SELECT count(*) FROM events" 2> /dev/null) # waits for a background finish
    whole=$(now)
    dropped=$("$GGPROF" query "$tmp/t.db" "SELECT value FROM meta WHERE key = 'dropped_records'")
    json=$(gzip -dc "$tmp/t.json.gz" | grep -c '^    {"type"')
    bg=$(grep -q 'in the background' "$tmp/err" && echo yes || echo no)
    ex=$(cat "$tmp/exit")
    printf '%-5s %10s %10s %10s %8s %10.2f %11.2f %8.2f %11s  %s\n' "$n" $((stored + dropped)) "$stored" "$json" "$dropped" \
        "$(echo "$ex - $start" | bc)" "$(echo "$end - $ex" | bc)" "$(echo "$whole - $ex" | bc)" "$bg" \
        "$(uptime | sed 's/.*load average: //')"
done
