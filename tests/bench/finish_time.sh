#!/usr/bin/env bash
# Benchmark (not a test): record's finishing time, from the workload's exit to record's own, for runs of N records
# (default 150k, 1.2M and 10M). The workload (tests/bench/rate_workload.c: graphs of 1,000 tiny ops on one thread,
# about two records an op) offers RATE records a second (default 250,000, below the rate the collector keeps up with:
# tests/bench/sustained_rate.sh), so the database and the JSON are built while it runs; RATE=0 runs
# tests/e2e/ring_overload.c instead, a burst of some 8 million records a second that leaves all of it for the end.
# The workload runs under `sh -c '...; date'`, whose time stamp is the exit; the ring is large enough that nothing
# is dropped (each line says so). Prints, per size: records stored, dropped, workload seconds, finishing seconds,
# and the machine's load.
# usage: [RATE=N] tests/bench/finish_time.sh [GGPROF [N...]]    (run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GGPROF=$(realpath "${1:-$ROOT/build/bin/ggprof}")
shift || true
RATE=${RATE:-250000}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(150000 1200000 10000000)
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for prog in ring_overload:e2e rate_workload:bench; do
    cc -std=c11 -O1 -o "$tmp/${prog%%:*}" "$ROOT/tests/${prog#*:}/${prog%%:*}.c" -I"$LLAMA_SRC_DIR/ggml/include" \
        -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN_DIR"
done
echo "workload: $([ "$RATE" = 0 ] && echo "a burst (ring_overload)" || echo "$RATE records/s offered (rate_workload)")"
printf '%-10s %10s %8s %10s %11s  %s\n' records stored dropped workload_s finishing_s load
for n in "${sizes[@]}"; do
    if [ "$RATE" = 0 ]; then
        kib=4096 # a slot big enough for the whole burst: the collector need not keep up
        while [ $((kib * 1024 / 48)) -lt "$n" ] && [ "$kib" -lt 1048576 ]; do kib=$((kib * 2)); done
        cmd="'$tmp/ring_overload' 4000 $(((n + 7899) / 7900))" # about 7,900 records a 4,000-op graph
    else
        kib=16384
        cmd="'$tmp/rate_workload' 1000 $RATE $(awk -v n="$n" -v r="$RATE" 'BEGIN { printf "%.3f", n / r }')"
    fi
    rm -f "$tmp/t.db" "$tmp/t.json.gz"
    start=$(date +%s.%N)
    "$GGPROF" record -q -o "$tmp/t.db" --ring-kib "$kib" -- sh -c "$cmd > /dev/null && date +%s.%N > '$tmp/exit'" \
        2> "$tmp/err" || {
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
