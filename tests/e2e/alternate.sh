# record --alternate (the engine's cost measured within one process, tests/bench/overhead_ab.sh): a fixed
# pseudo-random half of the graphs is recorded at the level asked for, the others at level graph only, and the
# full ones lose nothing by it.
. "$(dirname "$0")/../lib.sh"

db="$OUT/alt.db"
"$GGPROF" record -q --alternate -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "The quick brown fox" -n 12 -t 2 --no-warmup -no-cnv -s 1 > "$OUT/log" 2>&1
expect "record --alternate succeeds" "$?" 0
expect "every graph recorded (prompt + 11 tokens)" "$(q "$db" "SELECT count(*) FROM graphs")" 12
# The graphs ggprof_alternate_full (schema/ring.h) picks, computed here on their own: splitmix64's top bit.
picked=$(node -e '
    const m = (1n << 64n) - 1n, out = [];
    for (let id = 0n; id < 12n; id++) {
        let z = (id + 0x9e3779b97f4a7c15n) & m;
        z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & m;
        z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & m;
        out.push(Number((z ^ (z >> 31n)) >> 63n));
    }
    console.log(out.join(","))')
expect "the pseudo-random half is neither all, none nor every other graph" \
    "$(case "$picked" in *1*0*|*0*1*) ;; *) echo one-kind ;; esac; [ "$picked" = 1,0,1,0,1,0,1,0,1,0,1,0 ] &&
    echo alternating; [ "$picked" = 0,1,0,1,0,1,0,1,0,1,0,1 ] && echo alternating)" ""
expect "the picked graphs have their splits and ops, the others none" "$(q "$db" "SELECT group_concat(n, ',') FROM
    (SELECT (SELECT count(*) FROM splits s WHERE s.graph_id = g.graph_id) > 0 AND (SELECT count(*) FROM records r
    WHERE r.graph_id = g.graph_id AND r.type = 0) > 0 AS n FROM graphs g ORDER BY g.graph_id)")" "$picked"
check_cpu_trace "$db" alternate
expect "without --alternate every graph has its ops" "$("$GGPROF" record -q -o "$OUT/all.db" -- \
    "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 12 -t 2 --no-warmup -no-cnv -s 1 \
    > /dev/null 2>&1; q "$OUT/all.db" "SELECT count(DISTINCT graph_id) FROM records WHERE type = 0")" 12
