# A CPU split of more ops than one CPU_OPS message holds (GGPROF_CPU_OPS_MAX, 4096): the engine sends its ops in
# chunks of raw stamps, each with where the previous chunk's last op ended (ggprof_cpu_ops_carry), and the reader
# converts each chunk alone. The program: tests/bench/node_cost.c, graphs of 9,000 tiny ADD nodes on 2 threads
# (a barrier after each). Chunks must join: the split's records tile it in order, with no overlap and no gap at
# nodes 4096 and 8192, and each op's waits lie inside it.
. "$(dirname "$0")/../lib.sh"

build_ggml_program node_cost "$GGPROF_ROOT/tests/bench/node_cost.c"
db="$OUT/chunks.db"
rm -f "$db" "$OUT/chunks.json.gz"
"$GGPROF" record -q --level op --ring-kib 16384 -o "$db" -- "$OUT/node_cost" 9000 10 2 > "$OUT/out" 2> "$OUT/err"
expect "record runs it" "$?" 0
expect "nothing was dropped" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
check_cpu_trace "$db" "9000-node splits"
expect "every graph has a split of 9000 timed ops" "$(q "$db" "SELECT count(*) FROM (SELECT graph_id, split_id,
    count(*) c FROM events WHERE type = 0 GROUP BY 1, 2) WHERE c = 9000")" \
    "$(q "$db" "SELECT count(DISTINCT graph_id) FROM events WHERE type = 0")"
# In time order, each OP or SYNC record of a split starts where the one before it ended (the split's records tile
# it: an op from the previous op's barrier, a barrier wait from its op's tick), and ops come in node order.
expect "records of a split start where the previous one ends" "$(q "$db" "SELECT count(*) FROM (SELECT start_ns,
    lag(start_ns + duration_ns) OVER w AS prev_end FROM events WHERE type IN (0, 2)
    WINDOW w AS (PARTITION BY pid, graph_id, split_id ORDER BY start_ns, duration_ns, node_index)) WHERE start_ns != prev_end")" 0
expect "ops come in node order" "$(q "$db" "SELECT count(*) FROM (SELECT node_index, lag(node_index) OVER
    (PARTITION BY pid, graph_id, split_id ORDER BY start_ns, node_index) AS prev FROM events WHERE type = 0)
    WHERE node_index <= prev")" 0
expect "the ops at the chunks' joins have time (a carried start, not the split's)" "$(q "$db" "SELECT count(*)
    FROM events e JOIN split_list s ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id
    WHERE e.type = 0 AND e.node_index - s.node_start IN (4096, 8192) AND e.start_ns <= s.start_ns")" 0
expect "an op's waits lie inside it" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0
    AND wait_ns > duration_ns")" 0
expect_ge "2 threads: barrier waits between the nodes recorded" \
    "$(q "$db" "SELECT count(*) FROM events WHERE type = 2 AND name = 'cpu_barrier'")" 1

# One thread: ggml's barriers return at once (the plan's n_threads is 1), so the engine does not time them (one
# time-stamp read less a node); the ops still tile each split, with no barrier records between them.
db1="$OUT/alone.db"
rm -f "$db1" "$OUT/alone.json.gz"
"$GGPROF" record -q --level op -o "$db1" -- "$OUT/node_cost" 300 10 1 > "$OUT/out1" 2> "$OUT/err1"
expect "1 thread: record runs it" "$?" 0
expect "1 thread: every graph has a split of 300 timed ops" "$(q "$db1" "SELECT count(*) FROM (SELECT graph_id,
    split_id, count(*) c FROM events WHERE type = 0 GROUP BY 1, 2) WHERE c = 300")" \
    "$(q "$db1" "SELECT count(DISTINCT graph_id) FROM events WHERE type = 0")"
expect "1 thread: no barrier records" "$(q "$db1" "SELECT count(*) FROM events WHERE type = 2
    AND name = 'cpu_barrier'")" 0
expect "1 thread: each op starts where the one before it ended" "$(q "$db1" "SELECT count(*) FROM (SELECT start_ns,
    lag(start_ns + duration_ns) OVER w AS prev_end FROM events WHERE type = 0
    WINDOW w AS (PARTITION BY pid, graph_id, split_id ORDER BY start_ns, duration_ns, node_index))
    WHERE start_ns != prev_end")" 0
