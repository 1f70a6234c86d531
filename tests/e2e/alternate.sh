# record --alternate (the engine's cost measured within one process, tests/bench/overhead_ab.sh): even graphs
# are recorded at the level asked for, odd ones at level graph only, and the even ones lose nothing by it.
. "$(dirname "$0")/../lib.sh"

db="$OUT/alt.db"
"$GGPROF" record -q --alternate -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "The quick brown fox" -n 12 -t 2 --no-warmup -no-cnv -s 1 > "$OUT/log" 2>&1
expect "record --alternate succeeds" "$?" 0
expect "every graph recorded (prompt + 11 tokens)" "$(q "$db" "SELECT count(*) FROM graphs")" 12
expect "even graphs have their splits and ops, odd graphs none" "$(q "$db" "SELECT group_concat(n, ',') FROM
    (SELECT (SELECT count(*) FROM splits s WHERE s.graph_id = g.graph_id) > 0 AND (SELECT count(*) FROM records r
    WHERE r.graph_id = g.graph_id AND r.type = 0) > 0 AS n FROM graphs g ORDER BY g.graph_id)")" \
    "1,0,1,0,1,0,1,0,1,0,1,0"
check_cpu_trace "$db" alternate
expect "without --alternate every graph has its ops" "$("$GGPROF" record -q -o "$OUT/all.db" -- \
    "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 12 -t 2 --no-warmup -no-cnv -s 1 \
    > /dev/null 2>&1; q "$OUT/all.db" "SELECT count(DISTINCT graph_id) FROM records WHERE type = 0")" 12
