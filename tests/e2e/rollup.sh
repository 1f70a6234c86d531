# ggprof rollup and the roll-up views: goldens on the checked-in samples (samples/traces/rollup-*.json.gz),
# invariants on them and on a fresh llama-completion recording, the layer and block rules, and bad input.
# GGPROF_UPDATE_GOLDEN=1 rewrites the goldens (review the diff before committing it).
. "$(dirname "$0")/../lib.sh"

S="$GGPROF_ROOT/samples/traces"
G="$GGPROF_ROOT/tests/golden"

# Every roll-up of a sample, in every format, as the golden holds it.
rollups() { # SAMPLE
    local by
    for by in "layer" "layer --ops" "block" "block --ops" "phase" "graph"; do
        echo "\$ ggprof rollup $1 --by $by"
        # shellcheck disable=SC2086
        (cd "$S" && "$GGPROF" rollup "$1" --by $by) || echo "exit $?"
    done
    echo "\$ ggprof rollup $1 --by layer --format csv"
    (cd "$S" && "$GGPROF" rollup "$1" --by layer --format csv) || echo "exit $?"
    echo "\$ ggprof rollup $1 --by phase --format json"
    (cd "$S" && "$GGPROF" rollup "$1" --by phase --format json) || echo "exit $?"
}
for s in dense moe; do
    rollups "rollup-$s.json.gz" > "$OUT/rollup-$s.txt" 2>&1
    [ "${GGPROF_UPDATE_GOLDEN:-0}" = 1 ] && cp "$OUT/rollup-$s.txt" "$G/rollup-$s.txt"
    expect "$s: every roll-up matches tests/golden/rollup-$s.txt" \
        "$(diff -u "$G/rollup-$s.txt" "$OUT/rollup-$s.txt" > "$OUT/rollup-$s.diff" && echo same)" same
done

# rollup groups layers and blocks in C (model.c's one pass); the views say the same in SQL. Both as '|'
# separated rows (no name in the samples has a comma or a '|').
same_as_view() { # TRACE LABEL BY... -- SQL
    local t=$1 label=$2
    shift 2
    local by=()
    while [ "$1" != "--" ]; do by+=("$1"); shift; done
    "$GGPROF" rollup "$t" --by "${by[@]}" --format csv | tail -n +2 | tr , '|' > "$OUT/c.csv"
    "$GGPROF" query "$t" "$2" > "$OUT/v.csv"
    expect "$label: rollup --by ${by[*]} is the view, row by row" "$(diff "$OUT/v.csv" "$OUT/c.csv" > /dev/null && echo same ||
        echo "differs: $(diff "$OUT/v.csv" "$OUT/c.csv" | head -n 3 | tr '\n' ' ')")" same
    expect_ge "$label: ... and has rows" "$(wc -l < "$OUT/c.csv")" 3
}
ms() { echo "printf('%.3f', $1 / 1e6)"; }
pct() { echo "printf('%.2f', $1)"; }
views_agree() { # TRACE LABEL
    same_as_view "$1" "$2" layer -- "SELECT layer, ops, $(ms op_ns), $(pct op_pct), $(ms sync_ns), $(ms copy_ns) FROM layer_time"
    same_as_view "$1" "$2" layer --ops -- "SELECT layer, CASE type WHEN 0 THEN 'op' WHEN 1 THEN 'copy' ELSE 'sync' END,
        name, count, $(ms time_ns), $(pct op_pct) FROM layer_op_time"
    same_as_view "$1" "$2" block -- "SELECT block, count, $(ms time_ns), $(pct op_pct), layers FROM block_time"
    same_as_view "$1" "$2" block --ops -- "SELECT block, name, count, $(ms time_ns), $(pct op_pct) FROM block_op_time"
}
for s in dense moe; do views_agree "$S/rollup-$s.json.gz" "$s"; done

# What must hold on any llama.cpp trace: the roll-ups add up, every layer is there, names and layers agree.
invariants() { # TRACE LABEL N_LAYER
    local t=$1 l=$2 n=$3
    expect "$l: layer_time adds up to the OP, SYNC and COPY time" "$(q "$t" "SELECT
        (SELECT sum(op_ns) FROM layer_time) = (SELECT sum(duration_ns) FROM records WHERE type = 0) AND
        (SELECT sum(sync_ns) FROM layer_time) = (SELECT COALESCE(sum(duration_ns), 0) FROM records WHERE type = 2) AND
        (SELECT sum(copy_ns) FROM layer_time) = (SELECT COALESCE(sum(duration_ns), 0) FROM records WHERE type = 1)")" 1
    expect "$l: block_time adds up to every record" "$(q "$t" "SELECT (SELECT sum(time_ns) FROM block_time) =
        (SELECT sum(duration_ns) FROM records) AND (SELECT sum(count) FROM block_time) = (SELECT count(*) FROM records)")" 1
    expect "$l: op_pct of the OP rows adds up to 100" "$(q "$t" "SELECT round(sum(op_pct), 6) FROM layer_time")" 100.0
    expect "$l: layers 0..$((n - 1)) and '-', no other" "$(q "$t" "SELECT group_concat(COALESCE(layer, '-'), ' ') FROM layer_time")" \
        "$(seq -s ' ' 0 $((n - 1))) -"
    expect "$l: a name's layer number is the record's layer" "$(q "$t" "SELECT count(*) FROM op_layers WHERE type = 0
        AND (tensor_name GLOB '*-[0-9]' OR tensor_name GLOB '*-[0-9][0-9]') AND NOT tensor_name LIKE '%-' || layer")" 0
    expect "$l: the unnamed FLASH_ATTN_EXT gets its layer from the op before it, one per layer and graph" \
        "$(q "$t" "SELECT count(*) = $n * count(DISTINCT graph_id) AND count(DISTINCT layer) = $n AND count(layer) = count(*)
        FROM op_layers WHERE name = 'FLASH_ATTN_EXT' AND tensor_name GLOB 'node_*'")" 1
    expect_ge "$l: barrier waits attributed to layers" "$(q "$t" "SELECT count(*) FROM op_layers
        WHERE name = 'cpu_barrier' AND layer IS NOT NULL")" $((n * 4))
    expect "$l: blocks by op and name" "$(q "$t" "SELECT group_concat(DISTINCT name || '=' || block) FROM (SELECT name, block
        FROM op_layers WHERE name IN ('FLASH_ATTN_EXT', 'RMS_NORM', 'cpu_barrier') OR tensor_name = 'result_output'
        ORDER BY name)")" "FLASH_ATTN_EXT=attention,MUL_MAT=output,RMS_NORM=norm,cpu_barrier=sync"
    expect "$l: one prompt graph of several tokens, then 1-token generation graphs" "$(q "$t" "SELECT
        group_concat(phase || ':' || graphs || ':' || (tokens > graphs), ' ') FROM phase_time")" "prompt:1:1 generation:23:0"
    expect "$l: a graph's time per token is its time over its tokens" "$(q "$t" "SELECT count(*) FROM graph_phase
        WHERE abs(ns_per_token * n_tokens - duration_ns) > 1 OR duration_ns <= 0")" 0
    "$GGPROF" rollup "$t" --by graph --format csv > "$OUT/$l.graph.csv"
    expect "$l: --by graph: min <= median <= p90 <= max for every phase" "$(awk -F, 'NR > 1 && !($5 <= $6 && $6 <= $7 &&
        $7 <= $8) { bad++ } END { print NR - 1 ":" bad + 0 }' "$OUT/$l.graph.csv")" "2:0"
    "$GGPROF" rollup "$t" --by block --format json > "$OUT/$l.block.json"
    "$GGPROF" rollup "$t" --by block > "$OUT/$l.block.txt"
    expect "$l: --format json parses and has the table's rows" "$(node -e '
        const rows = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        console.log(rows.length + ":" + rows.every(r => typeof r.time_ms === "number" && typeof r.block === "string"))' \
        "$OUT/$l.block.json")" "$(($(wc -l < "$OUT/$l.block.txt") - 1)):true"
}
invariants "$S/rollup-dense.json.gz" dense-sample 4
invariants "$S/rollup-moe.json.gz" moe-sample 2
expect "moe-sample: MUL_MAT_ID and the router are MoE" "$(q "$S/rollup-moe.json.gz" "SELECT group_concat(DISTINCT block)
    FROM op_layers WHERE name = 'MUL_MAT_ID' OR tensor_name GLOB 'ffn_moe_probs-*'")" moe
expect "dense-sample: ffn_up, ffn_gate, ffn_out are FFN" "$(q "$S/rollup-dense.json.gz" "SELECT group_concat(DISTINCT block)
    FROM op_layers WHERE tensor_name GLOB 'ffn_up-*' OR tensor_name GLOB 'ffn_gate-*' OR tensor_name GLOB 'ffn_out-*'")" ffn

# A fresh recording: the views work on the database and on its JSON alike (layers and blocks do not depend on
# the graph list, which a JSON profile lacks).
db="$OUT/dense.db"
"$GGPROF" record -q -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 24 \
    -t 2 --no-warmup -no-cnv -s 1 > "$OUT/dense.log" 2>&1
expect "live: record exits 0" "$?" 0
invariants "$db" live 4
expect "live: graph_phase has every graph of the database" "$(q "$db" "SELECT (SELECT count(*) FROM graph_phase) =
    (SELECT count(*) FROM graphs)")" 1
for by in layer block "layer --ops"; do
    # shellcheck disable=SC2086
    expect "live: --by $by the same from the .db and the .json.gz" \
        "$("$GGPROF" rollup "$db" --by $by | md5sum)" "$("$GGPROF" rollup "$OUT/dense.json.gz" --by $by | md5sum)"
done

# Records not in graph order in the file (the graph ids reversed): the pass reads them sorted by SQLite instead of
# a graph at a time in file order, and every roll-up and the diff come out the same as the recording's.
cp "$db" "$OUT/reversed.db"
sqlite3 "$OUT/reversed.db" "UPDATE events SET graph_id = 1000000 - graph_id; UPDATE graph_list SET graph_id = 1000000 - graph_id;
    UPDATE split_list SET graph_id = 1000000 - graph_id" > /dev/null
expect "reversed: the file is out of graph order" "$(q "$OUT/reversed.db" "SELECT count(*) FROM events a JOIN events b
    ON b.rowid = a.rowid + 1 WHERE b.graph_id < a.graph_id")" "$(q "$db" "SELECT count(DISTINCT graph_id) - 1 FROM events")"
for by in layer block phase "layer --ops" "block --ops"; do
    # shellcheck disable=SC2086
    expect "reversed: --by $by as the recording's" \
        "$("$GGPROF" rollup "$OUT/reversed.db" --by $by | md5sum)" "$("$GGPROF" rollup "$db" --by $by | md5sum)"
done
expect "reversed: diff as the recording's" "$("$GGPROF" diff "$OUT/reversed.db" "$OUT/reversed.db" -n 0 --format csv | md5sum)" \
    "$("$GGPROF" diff "$db" "$db" -n 0 --format csv | md5sum)"

# The naming rules, through the SQL functions the views use.
expect "ggprof_layer: llama.cpp, GGUF, KV cache, scheduler copies, views; none for node_N and result_output" \
    "$(q "$db" "SELECT ggprof_layer('Qcur-3') || ',' || ggprof_layer('blk.12.attn_q.weight') || ',' ||
        ggprof_layer('cache_k_l2 (view)') || ',' || ggprof_layer('CPU#ffn_out-7#0') || ',' ||
        ggprof_layer('Kcur-10 (view) (permuted)') || ',' || COALESCE(ggprof_layer('node_21'), '-') || ',' ||
        COALESCE(ggprof_layer('result_output'), '-') || ',' || COALESCE(ggprof_layer('leaf_5'), '-')")" "3,12,2,7,10,-,-,-"
expect "ggprof_block: the documented rules" "$(q "$db" "SELECT ggprof_block(0, 'MUL_MAT', 'Qcur-0') || ',' ||
    ggprof_block(0, 'MUL_MAT', 'ffn_up-1') || ',' || ggprof_block(0, 'MUL_MAT_ID', 'ffn_moe_up-1') || ',' ||
    ggprof_block(0, 'SOFT_MAX', 'ffn_moe_probs-1') || ',' || ggprof_block(0, 'DIV', 'ffn_moe_weights_norm-0') || ',' ||
    ggprof_block(0, 'RMS_NORM', 'norm-2') || ',' || ggprof_block(0, 'MUL', 'attn_norm-2') || ',' ||
    ggprof_block(0, 'MUL_MAT', 'result_output') || ',' || ggprof_block(0, 'GET_ROWS', 'inp_embd') || ',' ||
    ggprof_block(0, 'FLASH_ATTN_EXT', 'node_21') || ',' || ggprof_block(0, 'MUL_MAT', 'blk.0.ffn_up_exps.weight') || ',' ||
    ggprof_block(0, 'ADD', 'l_out-1') || ',' || ggprof_block(2, 'cpu_barrier', NULL) || ',' ||
    ggprof_block(1, 'copy_H2D', 'Qcur-1')")" \
    "attention,ffn,moe,moe,moe,norm,norm,output,input,attention,moe,other,sync,copy"

# Mistakes: exit 2, one line naming the bad value.
bad() { # NAME NEEDLE ARGS...
    local name=$1 needle=$2
    shift 2
    "$GGPROF" rollup "$@" > /dev/null 2> "$OUT/err"
    local rc=$?
    expect "$name: exit 2, one line, says '$needle'" "$rc:$(wc -l < "$OUT/err"):$(grep -c -F -- "$needle" "$OUT/err")" "2:1:1"
}
bad "unknown --by" "unknown --by 'tensor'" "$db" --by tensor
bad "no --by" "no --by given" "$db"
bad "unknown format" "unknown format 'xml'" "$db" --by layer --format xml
bad "--ops with phase" "--ops goes with --by layer or block" "$db" --by phase --ops
bad "no such trace" "cannot open '$OUT/none.db'" "$OUT/none.db" --by layer
expect "rollup --help prints the usage" "$("$GGPROF" rollup --help | head -n 1 | cut -d' ' -f1-3)" "usage: ggprof rollup"
