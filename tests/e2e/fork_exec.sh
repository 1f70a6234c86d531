# Workloads of several processes: one that forks and computes graphs in both processes, and a shell that execs
# two ggml programs in turn and at the same time. Each process is recorded as itself: its own graphs, its own
# tensors, nothing of one counted in another.
. "$(dirname "$0")/../lib.sh"
build_ggml_program fork_exec
P="$OUT/fork_exec"

# per_pid DB: "graphs:names" of each ggml process, ordered by pid (names: its OP records' tensor names, distinct).
per_pid() {
    q "$1" "SELECT (SELECT count(*) FROM graphs g WHERE g.pid = p.pid) || ':' ||
        COALESCE((SELECT group_concat(n, ',') FROM (SELECT DISTINCT tensor_name AS n FROM records r
                  WHERE r.pid = p.pid AND r.type = 0 AND r.name = 'SOFT_MAX' ORDER BY 1)), '')
        FROM processes p WHERE p.ggml_lib != '' ORDER BY p.pid" | paste -sd' '
}

# fork: the parent computes 5 graphs, forks, computes 3 on a new scheduler; the child computes 7.
"$GGPROF" record -q -o "$OUT/fork.db" -- "$P" fork > "$OUT/fork.out" 2> "$OUT/fork.err"
expect "fork: record exits with the workload's status" "$?" 0
expect "fork: two ggml processes" "$(q "$OUT/fork.db" "SELECT count(*) FROM processes WHERE ggml_lib != ''")" 2
expect "fork: the child's parent is the workload" "$(q "$OUT/fork.db" "SELECT count(*) FROM processes c
    JOIN processes p ON c.ppid = p.pid")" 1
expect "fork: the parent's graphs and tensors, then the child's" "$(per_pid "$OUT/fork.db")" \
    "8:after_fork,before_fork 7:in_child"
expect "fork: every record belongs to a process the trace describes" "$(q "$OUT/fork.db" "SELECT count(*) FROM events e
    WHERE NOT EXISTS (SELECT 1 FROM processes p WHERE p.pid = e.pid)")" 0
check_cpu_trace "$OUT/fork.db" "fork"

# exec in turn: sh runs one program, then the other.
"$GGPROF" record -q -o "$OUT/turn.db" -- sh -c "'$P' compute 4 first && '$P' compute 6 second" \
    > "$OUT/turn.out" 2> "$OUT/turn.err"
expect "exec in turn: record exits with the shell's status" "$?" 0
expect "exec in turn: each program is its own process, with its graphs" "$(per_pid "$OUT/turn.db")" "4:first 6:second"
check_cpu_trace "$OUT/turn.db" "exec in turn"

# exec at the same time: both programs run at once, a graph every millisecond (their records interleave in the ring).
"$GGPROF" record -q -o "$OUT/same.db" -- sh -c "'$P' compute 200 left 1000 & '$P' compute 300 right 1000 & wait" \
    > "$OUT/same.out" 2> "$OUT/same.err"
expect "exec at once: record exits with the shell's status" "$?" 0
got=$(per_pid "$OUT/same.db")
case "$got" in "200:left 300:right" | "300:right 200:left") got=ok ;; esac
expect "exec at once: each program is its own process, with its graphs" "$got" ok
expect "exec at once: the two ran at the same time (each began before the other ended)" "$(q "$OUT/same.db" "SELECT
    (SELECT max(s) FROM (SELECT min(start_ns) AS s FROM graphs GROUP BY pid))
  < (SELECT min(e) FROM (SELECT max(start_ns + duration_ns) AS e FROM graphs GROUP BY pid))")" 1
check_cpu_trace "$OUT/same.db" "exec at once"
for t in fork turn same; do
    expect "$t: no record dropped" "$(q "$OUT/$t.db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
done
