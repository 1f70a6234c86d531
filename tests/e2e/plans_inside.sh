# Split plans where ggml is inside the program (kernels/cpu/cpu_ticks.c; docs/how-it-works.md, "Overhead"): the
# graph-building calls are direct there, so a kept plan holds only while its split's nodes print as they did. The
# same deterministic run recorded with plans on and with GGPROF_PLANS=0 (every split walked) must give the same op
# records (what each op is and where, not its times), and the plans-on run must have used kept plans. Also the
# version these builds record: llama.cpp's build info where LTO dropped ggml_version (static LTO llama-completion),
# ggml's own where it is exported (llama.node's index.node).
. "$(dirname "$0")/../lib.sh"
: "${STATIC_BIN_DIR:?run through tests/run.sh (tests/fixture.sh builds the static LTO llama.cpp)}" "${LLAMA_NODE_DIR:?}"

# The op records of a trace: each op's graph, split, node, fused node, op, tensor, shape, parameters.
ops() {
    q "$1" "SELECT graph_id, split_id, node_index, fused_index, name, tensor_name, ne, op_params, extra FROM records
        WHERE type = 0 ORDER BY graph_id, node_index, seq"
}
# The engine's note at exit: "CPU split plans: N splits, K on a kept plan, V verification walks, W walked (C ...".
plans() { q "$1" "SELECT text FROM notes WHERE text LIKE 'CPU split plans: %'"; }
field() { # DB N: the note's Nth number
    plans "$1" | grep -oE '[0-9]+' | sed -n "${2}p"
}

compare() { # LABEL DB_ON DB_OFF
    local l=$1 on=$2 off=$3
    expect "$l: the trace says plans are checked by their nodes' print" "$(q "$on" "SELECT count(*) FROM notes
        WHERE text LIKE 'split plans checked by their nodes'' print: graph-building calls are direct inside %'")" 1
    expect "$l: GGPROF_PLANS=0 turns plans off, with a note" "$(q "$off" "SELECT count(*) FROM notes
        WHERE text LIKE 'split plans off: GGPROF_PLANS=0%'")" 1
    expect_ge "$l: op records" "$(q "$on" "SELECT count(*) FROM records WHERE type = 0")" 100
    expect "$l: the same op records with plans on and off" "$(cmp -s <(ops "$on") <(ops "$off") && echo same \
        || echo differs)" same
    local splits kept
    splits=$(field "$on" 1) kept=$(field "$on" 2)
    echo "# $l: $(plans "$on")"
    echo "# $l, GGPROF_PLANS=0: $(plans "$off")"
    expect_ge "$l: most CPU splits used a kept plan ($kept of $splits)" "$((2 * ${kept:-0}))" "${splits:-1}"
    expect_ge "$l: some were verified by a walk" "$(field "$on" 3)" 1
    expect "$l: with plans off every split was walked" "$(field "$off" 2):$(field "$off" 3)" "0:0"
    expect "$l: as many splits either way" "$(field "$off" 1)" "$splits"
}

# ---- static LTO llama-completion: 40 tokens, so that plans reach their 16th use and are verified
for m in on off; do
    env $([ $m = off ] && echo GGPROF_PLANS=0) "$GGPROF" record -q --level op -o "$OUT/static-$m.db" -- \
        "$STATIC_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 40 -t 2 --no-warmup -no-cnv \
        -s 1 > "$OUT/static-$m.txt" 2> "$OUT/static-$m.err"
    expect "static, plans $m: record exits with llama-completion's status" "$?" 0
done
expect "static: the same text generated" "$(cmp -s "$OUT/static-on.txt" "$OUT/static-off.txt" && echo same)" same
compare static "$OUT/static-on.db" "$OUT/static-off.db"
check_cpu_trace "$OUT/static-on.db" "static, plans on"
# LTO dropped ggml_version (and no ggml version string is left in the image): llama.cpp's build info stands in.
expect "static: the version is llama.cpp's build info, not unknown" "$(q "$OUT/static-on.db" "SELECT ggml_version
    FROM processes" | grep -cE '^llama\.cpp b[0-9]+-[0-9A-Za-z._-]+$')" 1
expect "static: a note says where the version came from" "$(q "$OUT/static-on.db" "SELECT count(*) FROM notes
    WHERE text LIKE '%has no ggml_version: the version recorded is llama.cpp''s build info in its image%'")" 1

# ---- @fugood/llama.node: ggml inside a node addon
for m in on off; do
    env $([ $m = off ] && echo GGPROF_PLANS=0) "$GGPROF" record -q --level op -o "$OUT/node-$m.db" -- \
        node "$GGPROF_ROOT/tests/e2e/llama_node_run.mjs" "$LLAMA_NODE_DIR" "$GGUF_DENSE" 40 2 > "$OUT/node-$m.log" 2>&1
    expect "llama.node, plans $m: record exits with node's status" "$?" 0
done
compare llama.node "$OUT/node-on.db" "$OUT/node-off.db"
check_cpu_trace "$OUT/node-on.db" "llama.node, plans on"
expect "llama.node: the version is its ggml's" "$(q "$OUT/node-on.db" "SELECT ggml_version FROM processes" \
    | grep -cE '^[0-9]+\.[0-9]+\.[0-9]+$')" 1
