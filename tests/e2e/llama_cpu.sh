# llama-completion (our fixture build: CPU + OpenBLAS + RPC) on the dense and the MoE model, recorded at
# level op: every computed CPU node gets an OP record, ticks match, OP+SYNC cover the split.
. "$(dirname "$0")/../lib.sh"

for model in dense moe; do
    db="$OUT/$model.db"
    record_completion "$model" "$db"
    expect "$model: record exits with llama-completion's status" "$?" 0
    check_cpu_trace "$db" "$model"
    check_json "$OUT/$model.json.gz" "$db" "$model"
    expect "$model: one graph per decoded batch (prompt + 11 tokens)" \
        "$(q "$db" "SELECT count(*) FROM graphs WHERE sched_id = (SELECT max(sched_id) FROM graphs)")" 12
    # The prompt's graph and the token graphs have the same node at the same place with other shapes: each
    # record must carry its own graph's (the engine remembers descriptions by place, checked by content).
    expect "$model: node 0 has each graph's own shape (the prompt's tokens, then one)" "$(q "$db" "SELECT
        group_concat(t, ',') FROM (SELECT json_extract(ne, '\$[1]') > 1 AS t FROM records WHERE type = 0
        AND node_index = 0 AND sched_id = (SELECT max(sched_id) FROM graphs) ORDER BY start_ns)")" \
        "1,0,0,0,0,0,0,0,0,0,0,0"
    for op in GET_ROWS RMS_NORM MUL_MAT ROPE FLASH_ATTN_EXT GLU ADD; do
        expect_ge "$model: has $op on the CPU" "$(q "$db" "SELECT count(*) FROM records r JOIN backends b
            ON b.pid = r.pid AND b.sched_id = r.sched_id AND b.id = r.backend_id
            WHERE r.type = 0 AND r.name = '$op' AND b.name = 'CPU'")" 1
    done
    expect_ge "$model: RMS_NORM+MUL fusion seen and attributed" \
        "$(q "$db" "SELECT count(*) FROM records WHERE extra = 'RMS_NORM+MUL' AND fused_index = node_index + 1")" 1
    expect_ge "$model: barrier waits between nodes recorded" \
        "$(q "$db" "SELECT count(*) FROM records WHERE type = 2 AND name = 'cpu_barrier'")" 1
    n_layer=4
    [ "$model" = moe ] && n_layer=2
    expect "$model: one Qcur tensor name per layer" \
        "$(q "$db" "SELECT count(DISTINCT tensor_name) FROM records WHERE tensor_name LIKE 'Qcur-%'")" "$n_layer"
done

# What a token costs on the wire (meta ring_bytes): 32 more tokens than dense.db, the difference over the graphs
# they added. Each op's times are 16 bytes; which node it is goes once per plan (CPU_OPS_PLAN), not per token, so a
# token takes less than 32 bytes an op in all (the ids with every op took 32 for the op alone).
"$GGPROF" record -o "$OUT/dense44.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
    -n 44 -t 2 --no-warmup -no-cnv -s 1 > "$OUT/dense44.log" 2>&1
expect "dense, 44 tokens: record exits 0" "$?" 0
wire() { # DB: ring_bytes, graphs, CPU op records
    q "$1" "SELECT (SELECT value FROM meta WHERE key = 'ring_bytes') || ' ' || (SELECT count(*) FROM graphs) || ' ' ||
        (SELECT count(*) FROM records WHERE type = 0)"
}
read -r b12 g12 o12 < <(wire "$OUT/dense.db")
read -r b44 g44 o44 < <(wire "$OUT/dense44.db")
expect "dense: 32 more graphs with 32 more tokens" "$((g44 - g12))" 32
per_token=$(((b44 - b12) / (g44 - g12)))
ops_token=$(((o44 - o12) / (g44 - g12)))
expect_ge "dense: a token's bytes on the wire ($per_token) hold each op's 16 bytes of times ($ops_token ops)" \
    "$per_token" "$((16 * ops_token))"
expect_ge "dense: ... and under 32 bytes an op in all" "$((32 * ops_token - 1))" "$per_token"

expect_ge "moe: MUL_MAT_ID recorded with 8 experts in src0" "$(q "$OUT/moe.db" "SELECT count(*) FROM records
    WHERE name = 'MUL_MAT_ID' AND json_extract(ne_src, '\$[0][2]') = 8")" 1
"$GGPROF" report "$OUT/dense.db" > "$OUT/dense.report"
expect "report: prints the summary" "$(grep -c '=== Profiling Summary ===' "$OUT/dense.report")" 1
expect "report: MUL_MAT on the CPU backend listed" "$(grep -c '\[OP  \] backend 1 MUL_MAT ' "$OUT/dense.report")" 1
expect "report: reads the .json.gz alike" "$("$GGPROF" report "$OUT/dense.json.gz" | sed -n '/=== Profiling Summary/,/^  Total:/p' | md5sum)" \
    "$(sed -n '/=== Profiling Summary/,/^  Total:/p' "$OUT/dense.report" | md5sum)"
