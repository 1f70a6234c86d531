# Programs that carry ggml inside themselves (docs/how-it-works.md, "ggml inside the program"): the fixture's
# llama.cpp linked statically with LTO (llama-completion, llama-server), @fugood/llama.node's addon (ggml 0.18
# linked into index.node), a sample that computes graphs without a scheduler (static, LTO), and the same sample
# stripped. Each recorded op by op as a shared build is, or with one line saying why not.
. "$(dirname "$0")/../lib.sh"
: "${STATIC_BIN_DIR:?run through tests/run.sh (tests/fixture.sh builds the static LTO llama.cpp)}"
# The sample programs and the llama.node project (tests/fixture.sh, steps 2c and 4d).
: "${STATIC_SAMPLE:?}" "${STATIC_SAMPLE_INLINED:?}" "${STATIC_SAMPLE_STRIPPED:?}" "${LLAMA_NODE_DIR:?}"

# The engine's note on how ggml was reached, and what it patched.
reached() { q "$1" "SELECT text FROM notes WHERE text LIKE 'ggml inside %'"; }
patched() { # DB NAME: 1 when NAME was patched
    q "$1" "SELECT text FROM notes WHERE text LIKE 'patched in %'" | grep -cE "[:,] $2(,|\$)"
}

# ---- static LTO llama-completion, dense and MoE: the invariants of tests/e2e/llama_cpu.sh
for model in dense moe; do
    db=$OUT/static-$model.db
    record_completion "$model" "$db" "$STATIC_BIN_DIR"
    expect "static $model: record exits with llama-completion's status" "$?" 0
    check_cpu_trace "$db" "static $model"
    check_json "${db%.db}.json.gz" "$db" "static $model"
    expect "static $model: one graph per decoded batch (prompt + 11 tokens)" \
        "$(q "$db" "SELECT count(*) FROM graphs WHERE sched_id = (SELECT max(sched_id) FROM graphs)")" 12
    for op in MUL_MAT RMS_NORM ROPE GET_ROWS; do
        expect_ge "static $model: has $op on the CPU" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0
            AND name = '$op'")" 1
    done
    expect_ge "static $model: barrier waits between nodes recorded" \
        "$(q "$db" "SELECT count(*) FROM records WHERE type = 2 AND name = 'cpu_barrier'")" 1
    expect "static $model: the trace says ggml is inside llama-completion" \
        "$(reached "$db" | grep -c '^ggml inside llama-completion (found through its symbol table)')" 1
    for fn in ggml_backend_sched_graph_compute_async ggml_backend_cpu_set_abort_callback llama_decode; do
        expect "static $model: $fn patched" "$(patched "$db" "$fn")" 1
    done
    # ggml_barrier: patched where LTO left a call to it (the build on an AMD EPYC kept one of 115); where it inlined
    # every one (an Intel Xeon's -march=native build), the barrier is libgomp's, the trace says ggml_barrier is not
    # there, and the waits above came through GOMP_barrier.
    if nm "$STATIC_BIN_DIR/llama-completion" | grep -qE ' [tT] ggml_barrier$'; then
        expect "static $model: ggml_barrier patched" "$(patched "$db" ggml_barrier)" 1
    else
        expect "static $model: ggml_barrier inlined everywhere, the trace says so" "$(q "$db" "SELECT count(*) FROM notes
            WHERE text LIKE 'off in llama-completion:%ggml_barrier (barrier records): not in llama-completion (inlined%'")" 1
    fi
    expect "static $model: splits reached through the backend's interface table" \
        "$(q "$db" "SELECT count(*) FROM notes WHERE text LIKE 'backend computes reached through each backend''s interface table%'")" 1
    expect "static $model: every graph names its llama_decode call" "$(q "$db" "SELECT count(*) FROM graphs
        WHERE sched_id = (SELECT max(sched_id) FROM graphs) AND batch_id NOT IN (SELECT batch_id FROM batches)")" 0
done
expect_ge "static moe: MUL_MAT_ID recorded" "$(q "$OUT/static-moe.db" "SELECT count(*) FROM records
    WHERE name = 'MUL_MAT_ID'")" 1
"$GGPROF" record -o "$OUT/static-out.db" -q -- "$STATIC_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hi" -n 3 \
    -t 2 --no-warmup -no-cnv -s 1 > "$OUT/static-out.txt" 2> /dev/null
"$STATIC_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hi" -n 3 -t 2 --no-warmup -no-cnv -s 1 \
    > "$OUT/plain-out.txt" 2> /dev/null
expect "static: the program's output is the same under record" "$(cmp -s "$OUT/static-out.txt" "$OUT/plain-out.txt" \
    && echo same || echo differs)" same

# ---- @fugood/llama.node: ggml inside a node addon that node loads with dlopen
db=$OUT/llama-node.db
"$GGPROF" record -o "$db" -- node "$GGPROF_ROOT/tests/e2e/llama_node_run.mjs" "$LLAMA_NODE_DIR" "$GGUF_DENSE" 16 2 \
    > "$OUT/llama-node.log" 2>&1
expect "llama.node: record exits with node's status" "$?" 0
tokens=$(sed -n 's/^tokens: //p' "$OUT/llama-node.log")
expect_ge "llama.node: generated tokens" "${tokens:-0}" 1
expect_ge "llama.node: a graph recorded for each generated token" "$(q "$db" "SELECT count(*) FROM graphs")" \
    "${tokens:-1}"
# llama_decode is patched, but LTO inlined it into the addon's completion code: no batches (docs/compatibility.md).
check_cpu_trace "$db" "llama.node"
for op in MUL_MAT RMS_NORM ROPE; do
    expect_ge "llama.node: has $op" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0 AND name = '$op'")" 1
done
# Its ggml_barrier is `mov; ret` (OpenMP pragmas compiled out: the CPU backend computes on one thread), so
# there is no wait to time; the trace says so.
expect "llama.node: the trace says why there are no barrier records" "$(q "$db" "SELECT count(*) FROM notes
    WHERE text LIKE 'off in index.node: ggml_barrier (barrier records): it leaves (ret)%'")" 1
expect "llama.node: the trace says ggml is inside index.node, found through its dynamic symbols" \
    "$(reached "$db" | grep -c '^ggml inside index.node (found through its dynamic symbols)')" 1

# ---- the sample without a scheduler: every graph and op recorded, ticks matched
db=$OUT/sample.db
"$GGPROF" record -o "$db" -- "$STATIC_SAMPLE" -n 7 -t 2 > "$OUT/sample.log" 2>&1
expect "sample: record exits with the program's status" "$?" 0
check_cpu_trace "$db" "sample"
expect "sample: every graph recorded, each its own (no scheduler)" "$(q "$db" "SELECT count(*), min(n_splits),
    max(n_splits), max(sched_id) FROM graphs")" "7|1|1|0"
expect "sample: every split's ticks matched" "$(q "$db" "SELECT count(*) FROM splits WHERE ticks_matched = 1")" 7
expect "sample: ggml_backend_cpu_init patched (the backend is hooked where it is made)" \
    "$(patched "$db" ggml_backend_cpu_init)" 1
expect_ge "sample: MUL_MAT recorded in every graph" "$(q "$db" "SELECT min(n) FROM (SELECT count(*) n FROM records
    WHERE type = 0 AND name = 'MUL_MAT' GROUP BY graph_id)")" 1

# ---- the same sample without its symbols exported: LTO inlined or dropped the ggml functions the engine calls;
# one line says so, and the program runs unchanged
"$GGPROF" record -o "$OUT/inlined.db" -- "$STATIC_SAMPLE_INLINED" -n 3 > "$OUT/inlined.txt" 2> "$OUT/inlined.err"
expect "inlined: record exits with the program's status" "$?" 0
expect "inlined: one line names the functions missing and why" "$(grep -c "^ggprof: profiling off: [0-9]* functions the \
engine needs are not in static_graph-inlined (.*): inlined or left out by the linker$" "$OUT/inlined.err")" 1
expect "inlined: the program's output unchanged" "$(grep -c '^graphs: 3$' "$OUT/inlined.txt")" 1

# ---- stripped: one line, the program's output and status unchanged
"$STATIC_SAMPLE_STRIPPED" -n 3 --exit-status 3 > "$OUT/stripped-plain.txt" 2>&1
expect "stripped: the sample exits 3 when asked" "$?" 3
"$GGPROF" record -o "$OUT/stripped.db" -- "$STATIC_SAMPLE_STRIPPED" -n 3 --exit-status 3 > "$OUT/stripped.txt" \
    2> "$OUT/stripped.err"
expect "stripped: record passes the exit status on" "$?" 3
expect "stripped: the program's output unchanged" "$(cmp -s "$OUT/stripped.txt" "$OUT/stripped-plain.txt" && echo same \
    || echo differs)" same
expect "stripped: one line from the engine says why nothing is attached" \
    "$(grep -c "^ggprof: static_graph-stripped carries ggml inside it but is stripped" "$OUT/stripped.err")" 1

# ---- capture windows, requests, snapshots, the flight recorder and --sample on the static build: tests/e2e/capture.sh
# run whole on its llama-server and llama-completion
LLAMA_BIN_DIR=$STATIC_BIN_DIR GGPROF_TEST_NAME=ggml_inside-static-capture bash "$GGPROF_ROOT/tests/e2e/capture.sh"
