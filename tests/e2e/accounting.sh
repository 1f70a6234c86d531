# The whole run accounted for (docs/trace-database.md, "The whole run") and the CPU threads (docs/analysis.md,
# "Threads"): fork to exit and rusage for llama-completion, llama-server, node-llama-cpp and a sample that is not
# llama.cpp; idle measured for the server's waiting thread and not for a busy completion; -t 4 on two CPUs flagged
# as oversubscribed, -t 2 not; the per-op barrier figures add up to the barrier records.
. "$(dirname "$0")/../lib.sh"

# run_checks DB LABEL: what every recorded run has, read with sqlite3 itself.
run_checks() {
    local db=$1 l=$2
    expect "$l: one processes_time row per ggml process, from wait4, exit status 0" "$(sqlite3 "$db" "SELECT
        count(*) FROM processes p JOIN processes_time t ON t.pid = p.pid WHERE t.how = 'wait4' AND t.exit_status = 0")" 1
    expect "$l: fork before every graph, exit after every graph's end" "$(sqlite3 "$db" "SELECT count(*) FROM graph_list g
        JOIN processes_time t ON t.pid = g.pid WHERE g.start_ns < t.fork_ns OR g.start_ns + g.duration_ns > t.exit_ns")" 0
    expect "$l: rusage stored (CPU time, page faults, context switches)" "$(sqlite3 "$db" "SELECT count(*) FROM
        processes_time WHERE how = 'wait4' AND utime_ns + stime_ns > 0 AND minflt > 0 AND nvcsw + nivcsw > 0
        AND maxrss_kib > 0")" 1
    expect "$l: the CPUs allowed, as a list and its count" "$(sqlite3 "$db" "SELECT count(*) FROM processes_time
        WHERE how = 'wait4' AND n_cpus_allowed >= 1 AND cpus_allowed IS NOT NULL")" 1
    # a thread's first record wakes record, whose sampler follows it from there whatever its period (a second while
    # graphs compute): one that recorded for 50 ms is always seen, though record runs at nice 19
    expect "$l: every thread that recorded for 50 ms has its stats (schedstat) and an idle figure" "$(sqlite3 "$db" "SELECT
        count(*) FROM (SELECT pid, tid FROM events GROUP BY pid, tid HAVING max(start_ns) - min(start_ns) >= 50000000) e
        WHERE NOT EXISTS (SELECT 1 FROM thread_stats s WHERE s.pid = e.pid AND s.tid = e.tid AND s.cpu_ns > 0
        AND s.idle_ns IS NOT NULL)")" 0
    expect "$l: idle runs lie inside the run, none overlapping another of its thread" "$(sqlite3 "$db" "SELECT count(*)
        FROM thread_idle i JOIN processes_time t ON t.pid = i.pid WHERE i.start_ns < t.fork_ns OR i.end_ns > t.exit_ns
        OR i.end_ns <= i.start_ns OR EXISTS (SELECT 1 FROM thread_idle j WHERE j.pid = i.pid AND j.tid = i.tid
        AND j.rowid != i.rowid AND j.start_ns < i.end_ns AND i.start_ns < j.end_ns)")" 0
    expect "$l: a thread's idle is its runs added up" "$(sqlite3 "$db" "SELECT count(*) FROM thread_stats s WHERE
        s.idle_ns IS NOT NULL AND s.idle_ns != COALESCE((SELECT sum(end_ns - start_ns) FROM thread_idle i
        WHERE i.pid = s.pid AND i.tid = s.tid), 0)")" 0
}

# barrier_checks DB LABEL: report's per-op barrier figures against the barrier records.
barrier_checks() {
    local db=$1 l=$2
    "$GGPROF" report "$db" > "$OUT/$l.report"
    local rows total recs
    rows=$(sed -n '/^Threads:/,/^===/p' "$OUT/$l.report" | awk '$1 != "total" && NF == 6 && $2 ~ /^[0-9]+$/ { s += $5 } END { printf "%.0f\n", s }')
    total=$(sed -n '/^Threads:/,/^===/p' "$OUT/$l.report" | awk '$1 == "total" { print $2 }')
    recs=$(sqlite3 "$db" "SELECT sum(duration_ns) FROM events WHERE type = 2 AND name = 'cpu_barrier'")
    expect_ge "$l: barrier records to compare" "$recs" 1
    expect "$l: report's per-op barrier waits add up to the cpu_barrier records" "$rows:$total" "$recs:$recs"
    expect "$l: report's per-op busy time adds up to thread 0's op records less their inside waits" \
        "$(sed -n '/^Threads:/,/^===/p' "$OUT/$l.report" | awk '$1 != "total" && NF == 6 && $2 ~ /^[0-9]+$/ { s += $3 } END { print s + 0 }')" \
        "$(sqlite3 "$db" "SELECT sum(max(duration_ns - COALESCE(wait_ns, 0), 0)) FROM events WHERE type = 0 AND timing = 2")"
}

# ---- llama-completion, dense, on two CPUs: -t 4 is oversubscribed, -t 2 is not
for t in 2 4; do # -t 4 second: its start-up from a warm page cache, as a user's second run
    db=$OUT/completion$t.db
    taskset -c 0,1 "$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 64 \
        -t "$t" --no-warmup -no-cnv -s 1 > "$OUT/completion$t.log" 2>&1
    expect "completion -t $t: record exits with its status" "$?" 0
    run_checks "$db" "completion -t $t"
    expect "completion -t $t: ggml's threads and the two CPUs allowed" "$(sqlite3 "$db" "SELECT n_threads || ':' ||
        n_cpus_allowed || ':' || cpus_allowed FROM processes_time")" "$t:2:0-1"
    expect "completion -t $t: the meta keys the findings read" "$(sqlite3 "$db" "SELECT group_concat(key || '=' || value, ' ')
        FROM (SELECT key, value FROM meta WHERE key LIKE 'threads.%' OR key LIKE 'cpus_allowed.%' ORDER BY key)")" \
        "cpus_allowed.$(sqlite3 "$db" "SELECT pid FROM processes")=2 threads.$(sqlite3 "$db" "SELECT pid FROM processes")=$t"
    barrier_checks "$db" "completion$t"
done
expect "completion -t 4: report names the oversubscription" "$(grep -c 'ggml CPU threads 4, CPUs allowed 2 (0-1).*: OVERSUBSCRIBED' \
    "$OUT/completion4.report")" 1
expect "completion -t 2: report says it is not oversubscribed" "$(grep -c 'ggml CPU threads 2, CPUs allowed 2 (0-1).*: not oversubscribed' \
    "$OUT/completion2.report")" 1
# The findings read the same numbers: -t 4 on two CPUs ranks threads_oversubscribed first, -t 2 has none. 64 tokens:
# in a run of a few tokens the start (fork to the first graph) is most of the wall, and `loading` rightly outranks
# everything there (docs/findings.md): where the model file had left the page cache (this VM's guest reclaims a file
# nobody maps within seconds), `loading` came first even at 64 tokens, so it is left out of the ranking checked.
first_and_has() { "$GGPROF" report "$1" --format json | python3 -c 'import json,sys
f=[x["rule"] for x in json.load(sys.stdin)["findings"]]
g=[r for r in f if r != "loading"]
print(g[0] if g else "-", "threads_oversubscribed" in f)'; }
expect "completion -t 4: threads_oversubscribed is the first finding after loading" "$(first_and_has "$OUT/completion4.db")" \
    "threads_oversubscribed True"
expect "completion -t 2: no threads_oversubscribed finding" "$(first_and_has "$OUT/completion2.db" | cut -d' ' -f2)" False
# From its first graph to its last: before them the main thread can truly block (the model read from a cold page
# cache, weights repacked by other threads), which is start-up and loading, not compute.
expect "a busy completion: its ggml threads idle under a tenth of its decoding" "$(sqlite3 "$OUT/completion2.db" "
    WITH d AS (SELECT min(start_ns) AS a, max(start_ns + duration_ns) AS b FROM graphs)
    SELECT count(*) FROM thread_stats s, d WHERE s.idle_ns IS NOT NULL AND 10 * (SELECT COALESCE(sum(min(i.end_ns, d.b)
        - max(i.start_ns, d.a)), 0) FROM thread_idle i WHERE i.pid = s.pid AND i.tid = s.tid AND i.end_ns > d.a
        AND i.start_ns < d.b) > d.b - d.a")" 0

# ---- llama-server: two requests 2 s apart; its computing thread waits between them
db=$OUT/server.db
serve_two_requests "$db"
expect "server: record ends when the server does" "$?" 0
run_checks "$db" server
gap=$(sqlite3 "$db" "SELECT count(*) FROM batches a JOIN batches b ON b.pid = a.pid AND b.batch_id = (SELECT min(batch_id)
    FROM batches c WHERE c.pid = a.pid AND c.start_ns > a.start_ns + a.duration_ns + 1500000000)
    WHERE NOT EXISTS (SELECT 1 FROM batches d WHERE d.pid = a.pid AND d.start_ns > a.start_ns AND d.start_ns < b.start_ns)
    AND EXISTS (SELECT 1 FROM thread_idle i WHERE i.pid = a.pid AND i.tid = b.tid
        AND i.start_ns <= a.start_ns + a.duration_ns + 200000000 AND i.end_ns + 200000000 >= b.start_ns)")
expect "server: the thread computing the requests is idle across the 2 s between them, as one run" "$gap" 1
expect "server: its idle runs hold no more than a tenth of its recorded work" "$(sqlite3 "$db" "SELECT count(*) FROM
    thread_idle i WHERE (SELECT COALESCE(sum(e.duration_ns), 0) FROM events e WHERE e.pid = i.pid AND e.tid = i.tid
    AND e.start_ns >= i.start_ns AND e.start_ns + e.duration_ns <= i.end_ns) * 10 > i.end_ns - i.start_ns")" 0

# ---- node-llama-cpp
cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-script-accounting.mjs"
db=$OUT/node.db
(cd "$NODE_PROJECT_DIR" && "$GGPROF" record -o "$db" -- node ggprof-script-accounting.mjs "$GGUF_DENSE" 4) > "$OUT/node.log" 2>&1
expect "node: record exits with node's status" "$?" 0
run_checks "$db" node
expect_ge "node: ggml's CPU threads known" "$(sqlite3 "$db" "SELECT n_threads FROM processes_time")" 1

# ---- a ggml program that is not llama.cpp: samples/threads (four threads, two ggml threads per compute; 5000
# computes, under a second: the four live between two of the sampler's samples while graphs compute, and are seen
# because they record; ggml's workers, made for each compute and recording nothing, go unseen)
build_ggml_program threads "$GGPROF_ROOT/samples/threads/threads.c"
db=$OUT/threads.db
"$GGPROF" record -o "$db" -- "$OUT/threads" 4 5000 > "$OUT/threads.out" 2>&1
expect "threads sample: record exits with its status" "$?" 0
run_checks "$db" "threads sample"
expect "threads sample: ggml's CPU threads per compute" "$(sqlite3 "$db" "SELECT n_threads FROM processes_time")" 2
expect_ge "threads sample: its four computing threads have stats" "$(sqlite3 "$db" "SELECT count(*) FROM thread_stats s
    WHERE s.tid IN (SELECT tid FROM events) AND s.idle_ns IS NOT NULL")" 4
