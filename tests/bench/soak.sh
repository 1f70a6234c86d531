#!/usr/bin/env bash
# Benchmark (not a test): a long recording of a small model generating continuously at a steady rate, as a server
# does (tests/bench/soak_workload.c: one token per decode, PAUSE_MS between decodes, the context emptied when
# full). Every 5 s it samples the workload's and the collector's resident memory (all of it, and the anonymous part:
# the heap, where a leak would show; the rest is mostly the ring's shared pages, touched once) and the spill file's
# size. At the end it prints, and checks:
#   - memory held flat: each process's anonymous RSS over the last tenth of the run / over the second tenth;
#   - nothing dropped (the trace's dropped_records), the trace complete (one graph per decode the workload counted,
#     every CPU split's ticks matched), and readable (report, top-ops);
#   - what the database build at the end cost (record's own time after the workload ended, its peak memory).
# usage: tests/bench/soak.sh [MINUTES [PAUSE_MS]]   (default 30 minutes, 50 ms: about 18 tokens/s here)
# Exits 1 when a check fails. Run it on an otherwise idle machine; the samples go to $SOAK_OUT (default a
# temporary folder, removed) as soak.csv.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MINUTES=${1:-30}
PAUSE=${2:-50}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
out=${SOAK_OUT:-}
if [ -z "$out" ]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
mkdir -p "$out"
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/soak_workload" "$ROOT/tests/bench/soak_workload.c" \
    -I"$LLAMA_SRC_DIR/include" -I"$LLAMA_SRC_DIR/ggml/include" -L"$LLAMA_BIN_DIR" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$LLAMA_BIN_DIR"

mem_kb() { # PID FIELD
    local v
    v=$(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2> /dev/null)
    echo "${v:-0}"
}

rm -f "$out/soak.db" "$out/soak.json.gz"
"$GGPROF" record -o "$out/soak.db" -- "$out/soak_workload" "$GGUF_DENSE" $((MINUTES * 60)) "$PAUSE" 1 \
    > "$out/workload.out" 2> "$out/record.err" &
rec=$!
sleep 2
echo "t_s,workload_rss_kb,workload_anon_kb,collector_rss_kb,collector_anon_kb,spill_bytes" > "$out/soak.csv"
start=$(date +%s)
work=""
hwm=0
while kill -0 "$rec" 2> /dev/null; do
    work=$(pgrep -P "$rec" -x soak_workload || true)
    [ -z "$work" ] && break # the workload ended: what follows is the database build
    echo "$(($(date +%s) - start)),$(mem_kb "$work" VmRSS),$(mem_kb "$work" RssAnon),$(mem_kb "$rec" VmRSS)\
,$(mem_kb "$rec" RssAnon),$(stat -c %s "$out/soak.db.spill" 2> /dev/null || echo 0)" >> "$out/soak.csv"
    for _ in $(seq 1 50); do # 5 s, but the end of the workload is seen within 0.1 s
        kill -0 "$work" 2> /dev/null || break
        sleep 0.1
    done
done
workload_end=$(date +%s.%N)
while kill -0 "$rec" 2> /dev/null; do
    h=$(mem_kb "$rec" VmHWM); [ "$h" -gt "$hwm" ] && hwm=$h
    sleep 0.1
done
wait "$rec"
build_s=$(awk -v a="$workload_end" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

fail=0
check() { # NAME OK(0/1) DETAIL
    if [ "$2" = 1 ]; then echo "ok: $1 ($3)"; else echo "FAILED: $1 ($3)"; fail=1; fi
}
# RSS over a tenth of the samples (by row order, warm-up excluded), as a mean.
tenth_mean() { # COLUMN FIRST_TENTH(0-9)
    awk -F, -v c="$1" -v k="$2" 'NR > 1 { v[++n] = $c } END {
        a = int(n * k / 10) + 1; b = int(n * (k + 1) / 10); s = 0; m = 0
        for (i = a; i <= b; i++) { s += v[i]; m++ } printf "%.0f", m ? s / m : 0 }' "$out/soak.csv"
}
samples=$(($(wc -l < "$out/soak.csv") - 1))
echo "soak: $MINUTES min, a decode every ${PAUSE} ms; $samples samples in $out/soak.csv"
for col in 3:workload:2 5:collector:4; do
    IFS=: read -r c name all <<< "$col"
    early=$(tenth_mean "$c" 1) late=$(tenth_mean "$c" 9)
    ratio=$(awk -v a="$early" -v b="$late" 'BEGIN { printf "%.3f", a ? b / a : 0 }')
    check "$name memory flat: anonymous RSS last tenth / second tenth = $ratio" \
        "$(awk -v r="$ratio" 'BEGIN { print (r > 0 && r <= 1.05) ? 1 : 0 }')" \
        "$((early / 1024)) -> $((late / 1024)) MiB; all RSS $(($(tenth_mean "$all" 1) / 1024)) -> $(($(tenth_mean "$all" 9) / 1024)) MiB"
done
spill_mb=$(tail -n 1 "$out/soak.csv" | awk -F, '{ printf "%.0f", $6 / 1048576 }')
tokens=$(awk '/^tokens/ { print $2 }' "$out/workload.out")
q() { "$GGPROF" query "$out/soak.db" "$1"; }
graphs=$(q "SELECT count(*) FROM graphs")
records=$(q "SELECT count(*) FROM events")
check "nothing dropped" "$([ "$(q "SELECT value FROM meta WHERE key = 'dropped_records'")" = 0 ] && echo 1 || echo 0)" \
    "$records records, spill $spill_mb MiB"
check "trace complete: one graph per decode" "$([ "$graphs" = "$tokens" ] && echo 1 || echo 0)" \
    "$tokens decodes, $graphs graphs"
unmatched=$(q "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid AND b.sched_id = s.sched_id
    AND b.id = s.backend_id WHERE b.device_type = 0 AND s.ticks_matched IS NOT 1")
check "every CPU split's ticks matched" "$([ "$unmatched" = 0 ] && echo 1 || echo 0)" "$unmatched unmatched"
"$GGPROF" report "$out/soak.db" > "$out/report.txt" 2>&1 && "$GGPROF" top-ops "$out/soak.db" > /dev/null 2>&1
check "report and top-ops read it" "$([ $? = 0 ] && echo 1 || echo 0)" "$(du -m "$out/soak.db" | cut -f1) MiB database"
echo "database build after the workload ended: ${build_s} s for $records records; collector peak RSS $((hwm / 1024)) MiB"
exit "$fail"
