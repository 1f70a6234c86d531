# record --threads on llama-completion -t 2: every CPU op's busy and barrier wait on each thread (op_threads), read
# with sqlite3. Invariants only: rows for every thread of every op, thread 0's waits equal to its barrier records,
# every thread's busy + wait over a split the same span, the imbalance at least any worker's wait. Without
# --threads the table stays empty.
. "$(dirname "$0")/../lib.sh"
DB=$OUT/threads.db
"$GGPROF" record --threads -o "$DB" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 6 -t 2 \
    -no-cnv > "$OUT/llama.out" 2> "$OUT/llama.err"
expect "record --threads exits with llama-completion's status" "$?" 0
s() { sqlite3 "$DB" "$1"; }

expect_ge "op_threads: rows" "$(s "SELECT count(*) FROM op_threads")" 100
expect "op_threads: two threads, 0 and 1" "$(s "SELECT group_concat(thread) FROM (SELECT DISTINCT thread FROM op_threads ORDER BY 1)")" "0,1"
# Every timed CPU op (every one ends at a barrier in ggml's compute loop) has a row for each thread.
expect "every CPU op has a row per thread" "$(s "SELECT count(*) FROM events o WHERE o.type = 0 AND o.timing = 2
    AND (SELECT count(DISTINCT thread) FROM op_threads t WHERE t.pid = o.pid AND t.graph_id = o.graph_id
         AND t.node_index = o.node_index) != 2")" 0
expect "every row is a CPU op's" "$(s "SELECT count(*) FROM op_threads t WHERE NOT EXISTS (SELECT 1 FROM events o
    WHERE o.type = 0 AND o.pid = t.pid AND o.graph_id = t.graph_id AND o.node_index = t.node_index)")" 0
# Thread 0's wait: its barrier waits inside the op plus the barrier record after it, to the nanosecond.
expect "thread 0's waits equal its barrier records" "$(s "SELECT count(*) FROM op_threads t JOIN events o ON o.type = 0
    AND o.pid = t.pid AND o.graph_id = t.graph_id AND o.node_index = t.node_index WHERE t.thread = 0 AND t.wait_ns !=
    o.wait_ns + COALESCE((SELECT b.duration_ns FROM events b WHERE b.type = 2 AND b.name = 'cpu_barrier'
    AND b.pid = o.pid AND b.graph_id = o.graph_id AND b.start_ns = o.start_ns + o.duration_ns), 0)")" 0
# Busy + wait of each thread over a split is the span from its first op's start to its last barrier's end: thread
# 0's exactly (within the rounding of three conversions an op), a worker's up to thread 0's wake-up in that last barrier.
SPAN="SELECT t.pid, t.graph_id, t.split_id, t.thread, sum(t.busy_ns + t.wait_ns) AS sum, count(*) AS n,
    (SELECT max(b.start_ns + b.duration_ns) FROM events b WHERE b.type = 2 AND b.name = 'cpu_barrier' AND b.pid = t.pid
     AND b.graph_id = t.graph_id AND b.split_id = t.split_id) AS last_end,
    (SELECT min(o.start_ns) FROM events o WHERE o.type = 0 AND o.pid = t.pid AND o.graph_id = t.graph_id
     AND o.split_id = t.split_id) AS first_start,
    (SELECT b.duration_ns FROM events b WHERE b.type = 2 AND b.name = 'cpu_barrier' AND b.pid = t.pid
     AND b.graph_id = t.graph_id AND b.split_id = t.split_id ORDER BY b.start_ns DESC LIMIT 1) AS last_bar
    FROM op_threads t GROUP BY 1, 2, 3, 4"
expect "thread 0: busy + wait per split = first op start to last barrier end" "$(s "SELECT count(*) FROM ($SPAN)
    WHERE thread = 0 AND abs(sum - (last_end - first_start)) > 3 * n + 10")" 0
expect "workers: busy + wait per split = thread 0's, less at most its last wake-up" "$(s "SELECT count(*) FROM ($SPAN) w
    JOIN ($SPAN) z ON z.pid = w.pid AND z.graph_id = w.graph_id AND z.split_id = w.split_id AND z.thread = 0
    WHERE w.thread > 0 AND (w.sum > z.sum + 3 * w.n + 10 OR w.sum < z.sum - z.last_bar - 3 * w.n - 10)")" 0
# The imbalance (slowest minus fastest arrival, summed over the op's barriers) bounds every thread's wait for the
# slowest; it is on thread 0's row only.
expect "imbalance >= each worker's wait" "$(s "SELECT count(*) FROM op_threads t JOIN op_threads z ON z.pid = t.pid
    AND z.graph_id = t.graph_id AND z.node_index = t.node_index AND z.thread = 0 WHERE t.thread > 0
    AND z.imbalance_ns + 2 < t.wait_ns")" 0
expect "imbalance only on thread 0's rows" "$(s "SELECT count(*) FROM op_threads WHERE thread > 0 AND imbalance_ns != 0")" 0
expect "workers: their own kernel thread ids" "$(s "SELECT count(*) FROM op_threads t WHERE thread > 0 AND tid IN
    (SELECT tid FROM events e WHERE e.type = 0 AND e.pid = t.pid)")" 0

# Without --threads: nothing of it.
"$GGPROF" record -o "$OUT/plain.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 2 -t 2 \
    -no-cnv > /dev/null 2>&1
expect "without --threads: no op_threads rows" "$(sqlite3 "$OUT/plain.db" "SELECT count(*) FROM op_threads")" 0
