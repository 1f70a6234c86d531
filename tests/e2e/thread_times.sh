# record --threads on llama-completion -t 2: every CPU op's busy and barrier wait on each thread (op_threads), read
# with sqlite3. Invariants only: rows for every thread of every op, thread 0's waits equal to its barrier records,
# every thread's busy + wait over a split the same span, the imbalance at least any worker's wait. Without
# --threads the table stays empty. Then what report makes of it (its Threads section and --format json's "threads"
# are op_threads' sums; -t 4 on two CPUs ranks threads_oversubscribed first), a merged trace keeping the rows, and
# op_threads with absurd figures.
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

# ---- report: per op and thread, the sums of op_threads (the op named by its OP record)
"$GGPROF" report "$DB" --format json > "$OUT/t2.json"
expect "report --format json exits 0" "$?" 0
sums() { # DB JSON: op_threads' sums per op and thread against report's, and the op's imbalance; mismatches or OK
    python3 - "$1" "$2" << 'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rep = json.load(open(sys.argv[2]))["threads"]
bad = []
for p in rep:
    pid = p["pid"]
    want = {}
    for op, th, busy, wait, imb, n in db.execute(
            "SELECT e.name, t.thread, sum(t.busy_ns), sum(t.wait_ns), sum(t.imbalance_ns), sum(t.thread = 0)"
            " FROM op_threads t JOIN events e ON e.pid = t.pid AND e.graph_id = t.graph_id AND e.split_id = t.split_id"
            " AND e.node_index = t.node_index AND e.type = 0 WHERE t.pid = ? GROUP BY 1, 2", (pid,)):
        w = want.setdefault(op, {"threads": {}, "imbalance_ns": 0, "count": 0})
        w["threads"][th] = (busy, wait)
        w["imbalance_ns"] += imb
        w["count"] += n
    got = {o["op"]: o for o in p["ops"]} if p["per_thread"] else {}
    if set(got) != set(want):
        bad.append("pid %d ops %s != %s" % (pid, sorted(got), sorted(want)))
        continue
    for op, w in want.items():
        g = got[op]
        gt = {t["thread"]: (t["busy_ns"], t["wait_ns"]) for t in g["threads"]}
        if gt != w["threads"] or g["imbalance_ns"] != w["imbalance_ns"] or g["count"] != w["count"]:
            bad.append("pid %d %s" % (pid, op))
print(" ".join(bad) if bad else "OK")
PY
}
expect "report's per op and thread busy, wait, imbalance = op_threads' sums" "$(sums "$DB" "$OUT/t2.json")" OK
expect "report --format json: per_thread, two threads" "$(python3 -c 'import json,sys
p = json.load(open(sys.argv[1]))["threads"][0]
print(p["per_thread"], {len(o["threads"]) for o in p["ops"]}, p["oversubscribed"])' "$OUT/t2.json")" "True {2} False"
"$GGPROF" report "$DB" > "$OUT/t2.report"
expect "report's Threads: per op and thread" "$(grep -c 'per op and thread (record --threads' "$OUT/t2.report")" 1
"$GGPROF" report "$OUT/plain.db" > "$OUT/plain.report"
expect "without --threads: thread 0's view, naming record --threads" "$(grep -c 'per op, thread 0 .*record --threads' \
    "$OUT/plain.report")" 1

# ---- -t 4 on this 2-CPU machine: threads_oversubscribed is the first finding (after loading, which a short run's
# start-up rightly leads: tests/e2e/accounting.sh), thread_imbalance (if it fires) measured on every thread; -t 2: none
"$GGPROF" record --threads -o "$OUT/t4.db" -- taskset -c 0-1 "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "Hello" -n 6 -t 4 -no-cnv > /dev/null 2>&1
expect "record --threads -t 4 exits 0" "$?" 0
"$GGPROF" report "$OUT/t4.db" --format json > "$OUT/t4.json"
rules() { python3 -c 'import json,sys
f = [x for x in json.load(open(sys.argv[1]))["findings"] if x["rule"] != "loading"]
imb = [x["evidence"].get("measured") for x in f if x["rule"] == "thread_imbalance"]
print(f[0]["rule"] if f else "-", "threads_oversubscribed" in [x["rule"] for x in f], imb[0] if imb else "every thread")' "$1"; }
expect "-t 4 --threads: threads_oversubscribed first, imbalance of every thread" "$(rules "$OUT/t4.json")" \
    "threads_oversubscribed True every thread"
expect "-t 2 --threads: no threads_oversubscribed" "$(rules "$OUT/t2.json" | cut -d' ' -f2)" False
expect "-t 4: report's figures = op_threads' sums, four threads" "$(sums "$OUT/t4.db" "$OUT/t4.json"):$(python3 -c '
import json,sys; print({len(o["threads"]) for o in json.load(open(sys.argv[1]))["threads"][0]["ops"]})' "$OUT/t4.json")" "OK:{4}"

# ---- merge: the op_threads rows of every input, under its (shifted) pid; report reads them there
rm -f "$OUT/merged.db"
"$GGPROF" merge -o "$OUT/merged.db" "$DB" "$OUT/plain.db" > /dev/null 2>&1
expect "merge exits 0" "$?" 0
expect "merge keeps every op_threads row" "$(sqlite3 "$OUT/merged.db" "SELECT count(*) FROM op_threads")" \
    "$(s "SELECT count(*) FROM op_threads")"
"$GGPROF" report "$OUT/merged.db" --format json > "$OUT/merged.json"
expect "merged: report's figures = op_threads' sums, one process per thread" "$(sums "$OUT/merged.db" "$OUT/merged.json"):$(
    python3 -c 'import json,sys; print(sorted(p["per_thread"] for p in json.load(open(sys.argv[1]))["threads"]))' \
    "$OUT/merged.json")" "OK:[False, True]"

# ---- op_threads from anyone: negative, huge and non-numeric figures, absurd thread numbers. report runs, its
# figures stay in range.
cp "$DB" "$OUT/hostile.db"
sqlite3 "$OUT/hostile.db" "UPDATE op_threads SET busy_ns = -5000000000 WHERE rowid % 5 = 0;
    UPDATE op_threads SET wait_ns = 9223372036854775807, imbalance_ns = 9223372036854775807 WHERE rowid % 5 = 1;
    UPDATE op_threads SET thread = 100000 WHERE rowid % 5 = 2; UPDATE op_threads SET thread = -3 WHERE rowid % 7 = 3;
    UPDATE op_threads SET busy_ns = 'x', imbalance_ns = -1 WHERE rowid % 7 = 4;
    INSERT INTO op_threads SELECT pid, graph_id, sched_id, split_id, node_index, 65535, tid, 1, 1, 1 FROM op_threads LIMIT 1"
"$GGPROF" report "$OUT/hostile.db" > "$OUT/hostile.report" 2>&1
expect "hostile op_threads: report exits 0" "$?" 0
"$GGPROF" report "$OUT/hostile.db" --format json > "$OUT/hostile.json" 2>&1
expect "hostile op_threads: report --format json exits 0, figures in [0, 2^63)" "$?:$(python3 -c 'import json,sys
p = json.load(open(sys.argv[1]))["threads"][0]
v = [x for o in p["ops"] for t in o["threads"] for x in (t["busy_ns"], t["wait_ns"])] + [o["imbalance_ns"] for o in p["ops"]]
print(len(p["ops"][0]["threads"]), all(0 <= x < 2**63 for x in v))' "$OUT/hostile.json" 2>&1)" "0:2 True"
