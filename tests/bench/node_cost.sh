#!/usr/bin/env bash
# Benchmark (not a test): what recording at level op adds to each node of a graph. tests/bench/node_cost.c computes a
# graph of N_OPS tiny ADD nodes (16 floats) N_GRAPHS times through a scheduler on the CPU backend and prints the
# median ns a node; it runs plain and under `ggprof record --level op --ring-kib 65536` (nothing drops), in PAIRS
# alternating pairs, on 1 and 2 threads. Prints per configuration the medians of the plain and recorded runs and the
# median over pairs of (recorded - plain): the ns added a node (an OP and a barrier record each). Separate processes
# here differ by more than that (plain runs of one binary: 58-83 ns a node), so it also measures within a process:
# ALT_RUNS (default 3) runs under `record --alternate --level op`, which records a pseudo-random half of the graphs
# at level op and the rest at level graph only; from the trace's graphs table (the engine's time around each
# scheduler compute, as node_cost.c's own), the median over adjacent graphs of the two kinds of (op graph's time -
# graph-level graph's time) / nodes, pooled over the runs.
# With --callgrind it instead counts instructions (valgrind's callgrind, repeatable on a noisy machine) of one plain
# and one recorded run on NODE_COST_THREADS threads (default 1), with node-llama-cpp's prebuilt haswell CPU backend
# (the fixture's own is built for this CPU, with instructions valgrind does not know), and prints the instructions
# added a node, all of them and per function of libggprof.so. At 2 threads or more it also records with --threads,
# and prints each recorded run's own instructions in libggprof.so a node (the whole program's count then holds the
# threads' spinning in ggml's barriers, which depends on valgrind's scheduling, not on ggprof). Without --callgrind it
# first prints what one read of the engine's clock costs here (tests/bench/clock_cost.c).
# usage: tests/bench/node_cost.sh [PAIRS [N_OPS [N_GRAPHS]]]   (default 9 pairs, 2000 nodes, 200 graphs)
#        [NODE_COST_THREADS=2] tests/bench/node_cost.sh --callgrind [N_OPS [N_GRAPHS]] (default 2000 nodes, 40 graphs)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CALLGRIND=0
if [ "${1:-}" = --callgrind ]; then CALLGRIND=1; shift; fi
make -C "$ROOT" -s all
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
GGPROF=$ROOT/build/bin/ggprof
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load: $(uptime | sed 's/.*load average: //')"

if [ "$CALLGRIND" = 1 ]; then
    N_OPS=${1:-2000}
    N_GRAPHS=${2:-40}
    bins=$NODE_PROJECT_DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
    cc -std=c11 -O2 -Wall -Wextra -Werror -DNODE_COST_LOAD -o "$out/node_cost" "$ROOT/tests/bench/node_cost.c" \
        -I"$LLAMA_SRC_DIR/ggml/include" -L"$bins" -l:libggml.v0.4.0.so -lggml-base -Wl,-rpath,"$bins"
    export NODE_COST_CPU_LIB=$bins/libggml-cpu-haswell.so
    th=${NODE_COST_THREADS:-1}
    valgrind --tool=callgrind --callgrind-out-file="$out/plain.cg" "$out/node_cost" "$N_OPS" "$N_GRAPHS" "$th" \
        > /dev/null 2> "$out/plain.err"
    runs="rec"
    [ "$th" -gt 1 ] && runs="rec threads"
    for run in $runs; do
        opt=
        [ "$run" = threads ] && opt=--threads
        "$GGPROF" record --wait -o "$out/$run.db" --level op --ring-kib 65536 $opt -- valgrind --tool=callgrind \
            --callgrind-out-file="$out/$run.cg" "$out/node_cost" "$N_OPS" "$N_GRAPHS" "$th" > /dev/null 2> "$out/$run.err"
    done
    total() { callgrind_annotate "$1" 2> /dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'; }
    own() { callgrind_annotate --inclusive=no --threshold=100 "$1" 2> /dev/null | awk '/libggprof\.so/ { gsub(",", "", $1); s += $1 } END { print s + 0 }'; }
    nodes=$((N_OPS * N_GRAPHS))
    for run in $runs; do
        label=record
        [ "$run" = threads ] && label="record --threads"
        echo "threads $th, $label:"
        awk -v a="$(total "$out/plain.cg")" -v b="$(total "$out/$run.cg")" -v o="$(own "$out/$run.cg")" -v n="$nodes" \
            'BEGIN { printf "instructions added a node: %.1f, in libggprof.so: %.1f (%d nodes)\n", (b - a) / n, o / n, n }'
        callgrind_annotate --inclusive=no --threshold=100 "$out/$run.cg" 2> /dev/null |
            awk -v n="$nodes" '/libggprof\.so/ { gsub(",", "", $1); f = $4; sub(/.*:/, "", f); if ($1 / n >= 0.5) printf "  %-28s %6.1f\n", f, $1 / n }'
    done
    exit 0
fi

PAIRS=${1:-9}
N_OPS=${2:-2000}
N_GRAPHS=${3:-200}
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/node_cost" "$ROOT/tests/bench/node_cost.c" \
    -I"$LLAMA_SRC_DIR/ggml/include" -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN_DIR"
# The floor under the figures: one read of the engine's time-stamp clock (a node reads it once on one thread, twice
# on more), 8 ns on an AMD EPYC VM, 17-23 ns on an Intel Xeon one.
cc -std=c11 -O2 -Wall -Wextra -Werror -I"$ROOT/engine" -I"$ROOT/schema" -o "$out/clock_cost" \
    "$ROOT/tests/bench/clock_cost.c"
"$out/clock_cost"
. "$ROOT/tests/bench/stats.sh"
ns() { awk '{ for (i = 1; i < NF; i++) if ($i == "ns_per_node") print $(i + 1) }' "$1"; }

for threads in 1 2; do
    : > "$out/plain" && : > "$out/rec" && : > "$out/diff"
    for i in $(seq 1 "$PAIRS"); do
        run_plain() { "$out/node_cost" "$N_OPS" "$N_GRAPHS" "$threads" > "$out/p.out"; }
        run_rec() {
            rm -f "$out/r.db" "$out/r.json.gz"
            "$GGPROF" record --wait -o "$out/r.db" --level op --ring-kib 65536 -- "$out/node_cost" "$N_OPS" "$N_GRAPHS" \
                "$threads" > "$out/r.out" 2> "$out/r.err"
            grep -q "of $N_GRAPHS CPU splits timed op by op" "$out/r.err" || { cat "$out/r.err" >&2; exit 1; }
            if grep -q "dropped" "$out/r.err"; then echo "records dropped: raise --ring-kib" >&2; exit 1; fi
        }
        if [ $((i % 2)) = 1 ]; then run_plain; run_rec; else run_rec; run_plain; fi
        p=$(ns "$out/p.out") r=$(ns "$out/r.out")
        echo "$p" >> "$out/plain"
        echo "$r" >> "$out/rec"
        awk -v p="$p" -v r="$r" 'BEGIN { print r - p }' >> "$out/diff"
    done
    printf "threads %d: plain %.1f ns a node, recorded %.1f, added %.1f ns a node (median of %d pairs)\n" "$threads" \
        "$(median < "$out/plain")" "$(median < "$out/rec")" "$(median < "$out/diff")" "$PAIRS"
    : > "$out/alt"
    for i in $(seq 1 "${ALT_RUNS:-3}"); do
        rm -f "$out/a.db" "$out/a.json.gz"
        "$GGPROF" record --wait -o "$out/a.db" --alternate --level op --ring-kib 65536 -- "$out/node_cost" "$N_OPS" \
            "$N_GRAPHS" "$threads" > "$out/a.out" 2> "$out/a.err"
        if grep -q "dropped" "$out/a.err"; then echo "records dropped: raise --ring-kib" >&2; exit 1; fi
        nodes=$(awk '{ for (i = 1; i < NF; i++) if ($i == "nodes") print $(i + 1) }' "$out/a.out")
        alternate_pairs "$GGPROF" "$out/a.db" | awk -v n="$nodes" '{ print ($2 - $1) / n }' >> "$out/alt"
    done
    [ -s "$out/alt" ] || { echo "no adjacent graphs of the two kinds in the --alternate traces" >&2; exit 1; }
    printf "threads %d: within one process (record --alternate): added %.1f ns a node (median of %d adjacent graph pairs, %d runs)\n" \
        "$threads" "$(median < "$out/alt")" "$(wc -l < "$out/alt")" "${ALT_RUNS:-3}"
done
