#!/usr/bin/env bash
# Benchmark (not a test): where a recorded llama-bench run's extra time goes. Six kinds of run, in rotating rounds
# (each round runs every kind once, the order shifted by one each round):
#   plain         llama-bench alone
#   preload       libggprof.so preloaded, no recording (the engine's start-up, its wrappers idle)
#   graph         `ggprof record --level graph` (the engine outside graphs' detail, the collector, start-up and exit)
#   op            `ggprof record --level op` (what overhead.sh measures)
#   op-nosampler  op with GGPROF_RECORD_SAMPLER=0 (the collector's /proc sampler off: no thread_idle)
#   op-nobuilder  op with GGPROF_RECORD_BUILDER=0 (the database and JSON built at the end, not during the run)
# KINDS="op op-nosampler" runs only those. Each run: its wall time from exec to exit, the time inside token
# generation (llama-bench's reps x tokens / its average tokens/s), the rest (load, warm-up, start-up and exit), the
# workload's CPU (user+sys, /usr/bin/time around it) and, for recorded runs, the collector's: record's own CPU in all
# (the process tree's task-clock from perf stat, less the workload's), and while the workload ran, per second of
# the workload's wall time, its CPU ms and its wake-ups (voluntary context switches), summed over record's threads
# from /proc/PID/task/*/schedstat and status by a shell between record and the workload, when the workload exits.
# Prints the medians per kind and the parts of op's extra time over plain:
#   engine inside graphs (op - graph generation time), graph level inside graphs (graph - preload), the rest
#   outside generation (start-up, load, exit: preload - plain, record - preload), the collector's CPU, which on a
#   2-core machine competes with ggml's two threads, and what the sampler and the builder add to op's wall.
# usage: tests/bench/overhead_parts.sh [ROUNDS]   (default 9; about 12 s a round here)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-9}
TOKENS=${TOKENS:-64}
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
. "$ROOT/tests/bench/stats.sh"
GGPROF=$ROOT/build/bin/ggprof
LIB=$ROOT/build/lib/libggprof.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "load: $(uptime | sed 's/.*load average: //')"
BENCH=("$LLAMA_BIN_DIR/llama-bench" -m "$GGUF_DENSE" -p 0 -n "$TOKENS" -t 2 -r 3 -o jsonl)
TIMED=(/usr/bin/time -f "cpu %U %S %e" -o "$tmp/time.out")
# the collector (this shell's parent) while the workload ran: CPU ns and voluntary context switches of its threads
cat > "$tmp/wrap.sh" << 'EOF'
"${@:2}"
rc=$?
cat /proc/$PPID/task/*/schedstat | awk '{ ns += $1 } END { printf "%d ", ns }' > "$1"
cat /proc/$PPID/task/*/status | awk '/^voluntary_ctxt_switches/ { n += $2 } END { print n }' >> "$1"
exit $rc
EOF

run() { # KIND: appends "wall gen rest workload_cpu collector_cpu workload_wall collector_run_cpu collector_run_cs"
    # (us; a count) to $tmp/KIND
    local kind=$1 t0 t1 level=${1%%-*} env=()
    case $kind in
        *-nosampler) env=(GGPROF_RECORD_SAMPLER=0) ;;
        *-nobuilder) env=(GGPROF_RECORD_BUILDER=0) ;;
    esac
    rm -f "$tmp/r.db" "$tmp/r.json.gz" "$tmp/perf.out" "$tmp/coll.out"
    t0=$(date +%s%N)
    case $kind in
        plain) "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" 2> /dev/null ;;
        preload) LD_PRELOAD=$LIB "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" 2> /dev/null ;;
        *)
            env "${env[@]}" perf stat -x, -e task-clock -o "$tmp/perf.out" "$GGPROF" record -q --level "$level" \
                -o "$tmp/r.db" -- bash "$tmp/wrap.sh" "$tmp/coll.out" "${TIMED[@]}" "${BENCH[@]}" > "$tmp/bench.out" \
                2> /dev/null ;;
    esac
    t1=$(date +%s%N)
    local ts cpu wwall tree rcpu=0 rcs=0
    ts=$(grep -o '"avg_ts": *[0-9.]*' "$tmp/bench.out" | grep -o '[0-9.]*$')
    read -r cpu wwall < <(awk '/^cpu/ { print $2 + $3, $4 }' "$tmp/time.out")
    tree=$(awk -F, '/task-clock/ { print $1 }' "$tmp/perf.out" 2> /dev/null || true)
    [ -s "$tmp/coll.out" ] && read -r rcpu rcs < "$tmp/coll.out"
    awk -v w=$(((t1 - t0) / 1000)) -v ts="$ts" -v n="$TOKENS" -v cpu="$cpu" -v tree="${tree:-}" -v ww="$wwall" \
        -v rcpu="$rcpu" -v rcs="$rcs" 'BEGIN {
        gen = 3 * n / ts * 1e6; coll = tree == "" ? 0 : tree * 1000 - cpu * 1e6
        printf "%d %d %d %d %d %d %d %d\n", w, gen, w - gen, cpu * 1e6, coll, ww * 1e6, rcpu / 1000, rcs }' >> "$tmp/$kind"
}
read -r -a kinds <<< "${KINDS:-plain preload graph op op-nosampler op-nobuilder}"
nk=${#kinds[@]}
for r in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((nk - 1))); do run "${kinds[$(((k + r) % nk))]}"; done
    echo "round $r done" >&2
done
col() { awk -v c="$2" '{ print $c }' "$tmp/$1" | median; }
printf "%-13s %9s %9s %9s %9s %9s %9s %9s   (medians of %d runs; ms; the last two per s of workload)\n" kind \
    wall in-gen outside wl-cpu coll-cpu run-ms/s wakeups/s "$ROUNDS"
for k in "${kinds[@]}"; do
    printf "%-13s %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f %9.1f\n" "$k" "$(col "$k" 1 | awk '{ print $1 / 1000 }')" \
        "$(col "$k" 2 | awk '{ print $1 / 1000 }')" "$(col "$k" 3 | awk '{ print $1 / 1000 }')" \
        "$(col "$k" 4 | awk '{ print $1 / 1000 }')" "$(col "$k" 5 | awk '{ print $1 / 1000 }')" \
        "$(awk '{ print $7 / 1000 / ($6 / 1e6) }' "$tmp/$k" | median)" \
        "$(awk '{ print $8 / ($6 / 1e6) }' "$tmp/$k" | median)"
done
has() { [ -s "$tmp/$1" ]; }
if has plain && has preload && has graph && has op; then
    awk -v pg="$(col plain 2)" -v lg="$(col preload 2)" -v gg="$(col graph 2)" -v og="$(col op 2)" \
        -v po="$(col plain 3)" -v lo="$(col preload 3)" -v go="$(col graph 3)" -v oo="$(col op 3)" \
        -v pw="$(col plain 1)" -v ow="$(col op 1)" -v gc="$(col graph 5)" -v oc="$(col op 5)" 'BEGIN {
        printf "op over plain, wall: %+.1f ms\n", (ow - pw) / 1000
        printf "  inside generation: preload %+.1f, level graph %+.1f, level op %+.1f ms (of %.1f ms plain)\n", (lg - pg) / 1000, (gg - lg) / 1000, (og - gg) / 1000, pg / 1000
        printf "  outside generation (start-up, load, warm-up, exit): preload %+.1f, record graph %+.1f, op %+.1f ms\n", (lo - po) / 1000, (go - lo) / 1000, (oo - go) / 1000
        printf "  collector CPU: %.1f ms at level graph, %.1f ms at level op\n", gc / 1000, oc / 1000 }'
fi
for part in sampler builder; do
    if has op && has "op-no$part"; then
        awk -v a="$(col op 1)" -v b="$(col "op-no$part" 1)" -v ag="$(col op 2)" -v bg="$(col "op-no$part" 2)" \
            -v ac="$(col op 5)" -v bc="$(col "op-no$part" 5)" -v p="$part" 'BEGIN {
            printf "  the %s: %+.1f ms of op wall, %+.1f ms in generation, %+.1f ms of collector CPU\n", p,
                (a - b) / 1000, (ag - bg) / 1000, (ac - bc) / 1000 }'
    fi
done
