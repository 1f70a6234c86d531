# Where each node ran, and why (docs/placement.md), against ggml's own account of it: each run is made with
# GGML_SCHED_DEBUG=2, which prints every node's backend each time the scheduler splits a graph, and every node of
# every computed graph must have in node_placements the backend the scheduler printed. Two runs on node-llama-cpp's
# prebuilt Vulkan backend under lavapipe: llama-completion with a partial offload (-ngl 2 of the dense model's 4
# layers), and tests/e2e/placement_fallback.c, a graph with a custom op no device supports and a matrix product
# whose weights are in a host buffer. Then report's section, the dot view (rendered by Graphviz) and the tooltip.
. "$(dirname "$0")/../lib.sh"

export GGML_VK_VISIBLE_DEVICES=0 # ggml ignores CPU-type Vulkan devices unless asked for them
export GGML_BACKEND_PATH="$NODE_PROJECT_DIR/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan/libggml-vulkan.so"

# The scheduler's printed assignments, one line per graph it split: its nodes as "op|name|backend" (op and backend
# as cut to 10 and 5 characters, the name to 20), sorted. The indexes are left out: ggml prints a graph before the
# backends reorder their splits' nodes (graph_optimize), and the trace numbers nodes as they were computed, as op
# records do. A graph printed but not computed (llama.cpp's reserve passes) matches no computed graph, and need not.
sched_debug() { # LOG
    grep -aoE '## SPLIT #0:|node # *[0-9]+ \([^)]*\): .{20} \([^)]*\) \[.{5} ' "$1" | awk '
        /^## SPLIT #0:/ { b++; next }
        { op = $0; sub(/^[^(]*\( */, "", op); sub(/\).*/, "", op)
          name = $0; sub(/^[^)]*\): /, "", name); name = substr(name, 1, 20); sub(/^ +/, "", name)
          be = substr($0, length($0) - 5, 5); sub(/^ +/, "", be)
          print b "|" op "|" name "|" be }' | fingerprints
}
fingerprints() { # "key|rest" lines -> one line per key: its rests, sorted, joined
    sort -t'|' -k1,1n -k2 | awk -F'|' '{ k = $1; sub(/^[^|]*\|/, "")
        if (k != last && NR > 1) { print line; line = "" } last = k; line = line $0 ";" } END { if (NR) print line }'
}
# The same from the trace: for each computed graph, the nodes of the plan in effect for its scheduler.
traced() { # DB
    q "$1" "WITH g AS (SELECT pid, sched_id, graph_id FROM graph_list),
        pl AS (SELECT g.graph_id AS k, g.pid, g.sched_id, (SELECT max(p.graph_id) FROM node_placements p
            WHERE p.pid = g.pid AND p.sched_id = g.sched_id AND p.graph_id <= g.graph_id) AS g0 FROM g)
        SELECT pl.k || '|' || substr(CASE WHEN n.sub_op_name != '' THEN n.sub_op_name ELSE n.op END, 1, 10) || '|'
            || substr(n.tensor_name, 1, 20) || '|' || substr(b.name, 1, 5)
        FROM pl JOIN node_placements p ON p.pid = pl.pid AND p.sched_id = pl.sched_id AND p.graph_id = pl.g0
        JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id
        JOIN backend_list b ON b.pid = p.pid AND b.sched_id = p.sched_id AND b.id = p.backend_id" | fingerprints
}
check_vs_sched_debug() { # DB LOG LABEL
    sched_debug "$2" > "$1.sched-debug"
    traced "$1" > "$1.traced"
    expect_ge "$3: GGML_SCHED_DEBUG printed graphs" "$(wc -l < "$1.sched-debug")" 1
    expect "$3: every computed graph has placements" "$(wc -l < "$1.traced")" "$(q "$1" "SELECT count(*) FROM graph_list")"
    expect "$3: each graph's nodes on the backends GGML_SCHED_DEBUG=2 printed for it" \
        "$(grep -cFxvf "$1.sched-debug" "$1.traced")" 0
    expect "$3: one row per node per plan, not per token: fewer plans than graphs" \
        "$(q "$1" "SELECT count(DISTINCT graph_id) < (SELECT count(*) FROM graph_list) OR count(DISTINCT graph_id) = 1
            FROM node_placements")" 1
}
reason_of() { # DB TENSOR: reason, backend, preferred backend of each of its rows
    q "$1" "SELECT DISTINCT p.reason || ':' || b.name || ':' || COALESCE(pb.name, '-') FROM node_placements p
        JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id
        JOIN backend_list b ON b.pid = p.pid AND b.sched_id = p.sched_id AND b.id = p.backend_id
        LEFT JOIN backend_list pb ON pb.pid = p.pid AND pb.sched_id = p.sched_id AND pb.id = p.preferred_backend_id
        WHERE n.tensor_name = '$2'"
}

# ---------------------------------------------------------------- an op the device refuses, weights on the host
build_ggml_program placement_fallback
fb="$OUT/fallback.db"
GGML_SCHED_DEBUG=2 timeout 300 "$GGPROF" record -o "$fb" -- "$OUT/placement_fallback" > "$OUT/fallback.log" 2>&1
expect "the sample runs on Vulkan0 and the CPU" "$?:$(grep -c '^ok$' "$OUT/fallback.log")" "0:1"
check_vs_sched_debug "$fb" "$OUT/fallback.log" "sample"
expect "sample: the custom op: unsupported by Vulkan0, on the CPU" "$(reason_of "$fb" b_custom)" "unsupported:CPU:Vulkan0"
expect "sample: weights in a host buffer: on the CPU" "$(reason_of "$fb" c_hostw)" "weights_on_host:CPU:Vulkan0"
for t in a_dev d_dev e_out; do
    expect "sample: $t on the device, preferred" "$(reason_of "$fb" $t)" "preferred:Vulkan0:-"
done
expect "sample: the dot view's edges: c_hostw reads b_custom, e_out reads d_dev and a_dev" \
    "$(q "$fb" "SELECT group_concat(n.tensor_name || '=' || p.src_nodes, ' ') FROM node_placements p JOIN nodes n
        ON n.pid = p.pid AND n.node_id = p.node_id WHERE n.tensor_name IN ('c_hostw', 'e_out')")" "c_hostw=[1] e_out=[3,0]"

# ---------------------------------------------------------------- llama-completion, 2 of 4 layers offloaded
db="$OUT/ngl.db"
GGML_SCHED_DEBUG=2 timeout 300 "$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "Hello world" -n 3 -t 2 --no-warmup -no-cnv -ngl 2 -dev Vulkan0 -v > "$OUT/ngl.log" 2>&1
expect "llama-completion runs with 2 layers on Vulkan0" "$?" 0
check_vs_sched_debug "$db" "$OUT/ngl.log" "-ngl 2"
# Layers: where a layer's matrix products ran follows its weights (llama.cpp's "offloading N repeating layers").
per_layer=$(q "$db" "SELECT DISTINCT CAST(substr(n.tensor_name, instr(n.tensor_name, '-') + 1) AS INTEGER) || ':'
    || b.name || ':' || p.reason FROM node_placements p JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id
    JOIN backend_list b ON b.pid = p.pid AND b.sched_id = p.sched_id AND b.id = p.backend_id
    WHERE n.op = 'MUL_MAT' AND n.tensor_name GLOB '*-[0-9]*' ORDER BY 1")
expect "-ngl 2: matrix products of layers 0-2 on the CPU for their host weights, layer 3 on Vulkan0" \
    "$(echo $per_layer)" "0:CPU:weights_on_host 1:CPU:weights_on_host 2:CPU:weights_on_host 3:Vulkan0:preferred"
expect "-ngl 2: the token embeddings' GET_ROWS: weights on the host" "$(reason_of "$db" embd)" "weights_on_host:CPU:Vulkan0"
expect "-ngl 2: nodes on Vulkan0 are preferred, nodes on the CPU name Vulkan0 and a reason" \
    "$(q "$db" "SELECT count(*) FROM node_placements p JOIN backend_list b ON b.pid = p.pid AND b.sched_id = p.sched_id
        AND b.id = p.backend_id WHERE (b.name = 'Vulkan0') != (p.reason = 'preferred') OR (b.name = 'CPU'
        AND (p.preferred_backend_id IS NULL OR p.reason IS NULL))")" 0
expect "-ngl 2: every reason is one of the five" "$(q "$db" "SELECT count(*) FROM node_placements WHERE reason NOT IN
    ('preferred', 'unsupported', 'weights_on_host', 'inputs_on_host', 'scheduler') OR reason IS NULL")" 0

# ---------------------------------------------------------------- report, query, dot, tooltip
"$GGPROF" report "$db" > "$OUT/report.txt" 2> "$OUT/report.err"
expect "report exits 0" "$?" 0
section=$(sed -n '/^Placement:/,/^=== Trace/p' "$OUT/report.txt")
expect "report: a Placement row per backend" "$(echo "$section" | grep -cE '^(Vulkan0|CPU) ')" 2
expect "report: MUL_MAT's fallback for its weights, with its time" \
    "$(echo "$section" | awk '$1 == "MUL_MAT" && $2 == "weights_on_host" && $3 == "CPU" && $4 == "Vulkan0" && $6 > 0' | wc -l)" 1
last=$(q "$db" "SELECT max(graph_id) FROM graph_list")
expect "report --graphs of the last graph: the plan made at an earlier graph still holds there" \
    "$("$GGPROF" report "$db" --graphs "$last-$last" | sed -n '/^Placement:/,/^=== Trace/p' | grep -cE '^(Vulkan0|CPU) ')" 2
expect "report: the custom op's fallback in the sample's" \
    "$("$GGPROF" report "$fb" | awk '$1 == "MAP_CUSTOM1" && $2 == "unsupported"' | wc -l)" 1
"$GGPROF" report "$fb" --format json > "$OUT/fallback.report.json" 2> "$OUT/fallback.report.err"
expect "findings: fallback ranks first in the sample built to show it, the op and reason named" \
    "$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]
print(f[0]["rule"], f[0]["evidence"]["backend"], f[0]["evidence"]["preferred"], f[0]["evidence"]["reason"] in ("unsupported", "weights_on_host"))' \
        "$OUT/fallback.report.json")" "fallback CPU Vulkan0 True"
expect "report: no section for a trace without placements (placement unknown)" \
    "$("$GGPROF" report "$GGPROF_ROOT/samples/traces/upstream-v3.json" | grep -c '^Placement')" 0

layer_nodes=$(q "$db" "SELECT count(*) FROM node_placements p JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id
    WHERE p.graph_id = (SELECT min(graph_id) FROM node_placements) AND (n.tensor_name GLOB '*-1'
    OR n.tensor_name GLOB 'cache_[kv]_l1 *')")
"$GGPROF" export "$db" --dot "$OUT/layer1.dot" --layer 1
expect "export --dot exits 0" "$?" 0
dot -Tsvg "$OUT/layer1.dot" > "$OUT/layer1.svg" 2> "$OUT/dot.err"
expect "dot -Tsvg renders it" "$?:$(wc -c < "$OUT/dot.err")" "0:0"
expect_ge "layer 1 has nodes" "${layer_nodes:-0}" 10
expect "the SVG has one box per node of layer 1" "$(grep -c '<g id="node[0-9]*" class="node">' "$OUT/layer1.svg")" "$layer_nodes"
expect "fallbacks outlined and labelled with their reason" "$(grep -c 'fallback: weights_on_host (not Vulkan0)' "$OUT/layer1.svg")" \
    "$(q "$db" "SELECT count(*) FROM node_placements p JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id
        WHERE p.graph_id = (SELECT min(graph_id) FROM node_placements) AND (n.tensor_name GLOB '*-1'
        OR n.tensor_name GLOB 'cache_[kv]_l1 *') AND p.reason = 'weights_on_host'")"
"$GGPROF" export "$fb" --dot "$OUT/sample.dot" && dot -Tsvg "$OUT/sample.dot" > "$OUT/sample.svg"
expect "sample: dot: every node, 5 edges" "$(grep -c 'class="node"' "$OUT/sample.svg"):$(grep -c 'class="edge"' "$OUT/sample.svg")" "5:5"
expect "--dot of a layer the graph lacks: one line naming it, exit 2" \
    "$("$GGPROF" export "$db" --dot "$OUT/x.dot" --layer 77 2>&1 | grep -c "no node of layer 77"):$("$GGPROF" export "$db" --dot "$OUT/x.dot" --layer 77 > /dev/null 2>&1; echo $?)" "1:2"
expect "--layer without --dot: exit 2" "$("$GGPROF" export "$db" --json "$OUT/x.json" --layer 1 > /dev/null 2>&1; echo $?)" 2
"$GGPROF" export "$GGPROF_ROOT/samples/traces/upstream-v3.json" --dot "$OUT/y.dot" > "$OUT/y.out" 2>&1
expect "--dot of a trace without placements says so, exit 2" "$?:$(grep -c 'no node placement' "$OUT/y.out")" "2:1"

"$GGPROF" export "$fb" --html "$OUT/sample.html"
expect "html: the page carries the sample's fallbacks" "$(grep -o '"placements":\[\[[0-9]*,[0-9]*,-1,{"1":\["unsupported","CPU","Vulkan0"\],"2":\["weights_on_host","CPU","Vulkan0"\]}\]\]' "$OUT/sample.html" | wc -l)" 1
if nm_dir=$(bash "$GGPROF_ROOT/tests/browser/install.sh" 2> "$OUT/install.log"); then
    NODE_PATH="$nm_dir" node "$GGPROF_ROOT/tests/browser/viewer_check.js" "$OUT/sample.html" "$OUT" > "$OUT/browser.txt" 2>&1
    expect "html: hovering the longest fallback shows where it ran and why" \
        "$(grep '^tooltip_fallback=' "$OUT/browser.txt" | grep -cE 'backend ?CPU, not Vulkan0: (weights on host|unsupported)')" 1
else
    not_ok "browser: install chromium and playwright-core" "$(tail -n 3 "$OUT/install.log" | tr '\n' ' ')"
fi
