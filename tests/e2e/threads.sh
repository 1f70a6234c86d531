# Threads computing graphs at once (samples/threads: four threads, each with its own scheduler and two ggml
# threads per compute) and llama-completion with two threads: each thread's graphs recorded whole and apart. In
# a sanitized build (make test SAN=thread, SAN=address,undefined) the same runs must leave no sanitizer report.
. "$(dirname "$0")/../lib.sh"
build_ggml_program threads "$GGPROF_ROOT/samples/threads/threads.c"

# sanitizer_clean LABEL STDERR: in a sanitized build, the workload's stderr holds no report.
sanitizer_clean() {
    [ -n "${GGPROF_SAN:-}" ] || return 0
    expect "$1: no sanitizer report ($GGPROF_SAN)" "$(grep -c 'Sanitizer\|runtime error' "$2")" 0
}

"$GGPROF" record -o "$OUT/threads.db" -- "$OUT/threads" 4 50 > "$OUT/threads.out" 2> "$OUT/threads.err"
expect "4 threads: record exits with the program's status" "$?" 0
sanitizer_clean "4 threads" "$OUT/threads.err"
expect "4 threads: 50 graphs each, every one computed on its own thread" "$(q "$OUT/threads.db" "SELECT
    group_concat(tensor_name || ':' || n || ':' || tids, ' ') FROM (SELECT tensor_name, count(*) AS n,
    count(DISTINCT tid) AS tids FROM records WHERE type = 0 AND name = 'SOFT_MAX' GROUP BY 1 ORDER BY 1)")" \
    "thread0:50:1 thread1:50:1 thread2:50:1 thread3:50:1"
expect "4 threads: four threads apart (no thread's graph under another's)" "$(q "$OUT/threads.db" "SELECT
    count(DISTINCT tid) FROM records WHERE type = 0 AND name = 'SOFT_MAX'")" 4
expect "4 threads: 200 graphs" "$(q "$OUT/threads.db" "SELECT count(*) FROM graphs")" 200
expect "4 threads: every MUL_MAT beside its own SOFT_MAX (same thread, same graph)" "$(q "$OUT/threads.db" "SELECT
    count(*) FROM records m WHERE m.type = 0 AND m.name = 'MUL_MAT' AND NOT EXISTS (SELECT 1 FROM records s
    WHERE s.type = 0 AND s.name = 'SOFT_MAX' AND s.pid = m.pid AND s.graph_id = m.graph_id AND s.tid = m.tid)")" 0
expect "4 threads: no record dropped" "$(q "$OUT/threads.db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
check_cpu_trace "$OUT/threads.db" "4 threads"

"$GGPROF" record -o "$OUT/llama.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 8 -t 2 \
    -no-cnv > "$OUT/llama.out" 2> "$OUT/llama.err"
expect "llama-completion -t 2: record exits with its status" "$?" 0
sanitizer_clean "llama-completion -t 2" "$OUT/llama.err"
expect_ge "llama-completion -t 2: its graphs" "$(q "$OUT/llama.db" "SELECT count(*) FROM graphs")" 8
check_cpu_trace "$OUT/llama.db" "llama-completion -t 2"
