#!/usr/bin/env bash
# Benchmark (not a test): record's finishing time, from the workload's exit to record's own, for runs of N records
# (default 150k, 1.2M and 10M). The workload is tests/e2e/ring_overload.c (graphs of 4,000 tiny ops on one thread,
# about 7,900 records a graph, some 8 million records a second here): it emits its records as fast as ggml computes,
# so nearly all of record's work (the database, the JSON) is left for after its exit. The workload runs under
# `sh -c '...; date'`, whose time stamp is the exit; the ring is large enough that nothing is dropped (each line says
# so). Prints, per size: records stored, dropped, workload seconds, finishing seconds, and the machine's load.
# usage: tests/bench/finish_time.sh [GGPROF [N...]]    (run it on an idle machine: uptime is printed beside each)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$(realpath "${1:-$ROOT/build/bin/ggprof}")
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(150000 1200000 10000000)
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O1 -o "$tmp/ring_overload" "$ROOT/tests/e2e/ring_overload.c" -I"$LLAMA_SRC_DIR/ggml/include" \
    -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN_DIR"
per_graph=7900 # records a 4,000-op graph makes on one thread (its ops and barrier records)
printf '%-10s %10s %8s %10s %11s  %s\n' records stored dropped workload_s finishing_s load
for n in "${sizes[@]}"; do
    graphs=$(((n + per_graph - 1) / per_graph))
    # A slot big enough for the whole run: the collector drains it while the workload runs, but need not keep up.
    kib=4096
    while [ $((kib * 1024 / 48)) -lt "$n" ] && [ "$kib" -lt 1048576 ]; do kib=$((kib * 2)); done
    rm -f "$tmp/t.db" "$tmp/t.json.gz"
    start=$(date +%s.%N)
    "$GGPROF" record -q -o "$tmp/t.db" --ring-kib "$kib" -- \
        sh -c "'$tmp/ring_overload' 4000 $graphs > /dev/null && date +%s.%N > '$tmp/exit'" 2> "$tmp/err" || {
        cat "$tmp/err" >&2
        exit 1
    }
    end=$(date +%s.%N)
    stored=$(sqlite3 "$tmp/t.db" "SELECT count(*) FROM events")
    dropped=$(sqlite3 "$tmp/t.db" "SELECT value FROM meta WHERE key = 'dropped_records'")
    printf '%-10s %10s %8s %10.2f %11.2f  %s\n' "$n" "$stored" "$dropped" \
        "$(echo "$(cat "$tmp/exit") - $start" | bc)" "$(echo "$end - $(cat "$tmp/exit")" | bc)" \
        "$(uptime | sed 's/.*load average: //')"
done
