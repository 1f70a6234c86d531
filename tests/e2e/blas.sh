# The BLAS backend (OpenBLAS in the fixture build): a prompt of 32+ tokens sends MUL_MAT to BLAS, which ggprof
# times node by node (each node computed alone, then synchronized): records say so. -nr: on a CPU with AMX (an Intel
# Xeon with AMX_INT8) llama.cpp otherwise puts the weights in an AMX buffer, which BLAS cannot read: no MUL_MAT on BLAS.
. "$(dirname "$0")/../lib.sh"

prompt="$(seq -s " " 1 40)"
db="$OUT/blas.db"
"$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "$prompt" -n 4 -t 2 --no-warmup \
    -no-cnv -b 64 -ub 64 -nr > "$OUT/log" 2>&1
expect "record succeeds" "$?" 0
bq() { q "$db" "SELECT $1 FROM records r JOIN backends b ON b.pid = r.pid AND b.sched_id = r.sched_id
    AND b.id = r.backend_id WHERE b.name = 'BLAS' AND r.type = 0 ${2:-}"; }
expect_ge "MUL_MAT computed by BLAS during the prompt" "$(bq "count(*)" "AND r.name = 'MUL_MAT'")" 28
expect "every BLAS record says 'serialized'" "$(bq "count(*)" "AND r.timing != 3")" 0
expect "BLAS ops carry their shapes" "$(bq "count(*)" "AND (r.tensor_name IS NULL OR json_extract(r.ne_src, '\$[1][1]') < 32)")" 0
expect "serialized records lie inside their split" "$(q "$db" "SELECT count(*) FROM events e JOIN split_list s
    ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id WHERE e.timing = 3
    AND (e.start_ns < s.start_ns OR e.start_ns + e.duration_ns > s.start_ns + s.duration_ns)")" 0
expect "and do not overlap" "$(q "$db" "SELECT count(*) FROM events a JOIN events b ON a.pid = b.pid
    AND a.graph_id = b.graph_id AND a.split_id = b.split_id AND a.rowid < b.rowid AND a.timing = 3 AND b.timing = 3
    AND b.start_ns < a.start_ns + a.duration_ns")" 0
check_cpu_trace "$db" blas
