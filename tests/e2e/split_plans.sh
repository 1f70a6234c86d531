# Split plans (kernels/cpu/cpu_ticks.c): what the engine learns by walking a CPU split's nodes is kept while the
# graph is computed again unchanged. A ggml call that changes a node makes the next compute walk again; a program
# that writes a tensor's fields itself is caught at the next verification walk (every 16th use of a plan), which
# notes it in the trace and stops keeping plans. The program: tests/e2e/split_plans.c, 40 computes of one graph,
# then 300 more, each on a thread of its own: more threads than the ring has slots, one after the other, as a
# server that starts a thread per request does.
. "$(dirname "$0")/../lib.sh"

build_ggml_program split_plans

db="$OUT/plans.db"
"$GGPROF" record -q --level op -o "$db" -- "$OUT/split_plans" > "$OUT/stdout" 2> "$OUT/stderr"
expect "record runs it" "$?:$(tail -n 1 "$OUT/stdout")" "0:ok"
# A thread that ends hands its slot back and wakes the collector, which frees it for the next thread.
expect "no record dropped though 301 threads recorded and the ring has 64 slots" "$(q "$db" "SELECT value FROM meta
    WHERE key = 'dropped_records'")" 0
check_cpu_trace "$db" "split plans"
expect "one graph per compute, each with its SCALE, ADD and SOFT_MAX" "$(q "$db" "SELECT count(DISTINCT graph_id)
    FROM records WHERE type = 0 AND name IN ('SCALE', 'ADD', 'SOFT_MAX') GROUP BY name" | sort -u)" 340

# ggml_set_name before compute 4: computes 0-3 name the ADD 'z', every later one 'z_renamed'.
expect "ADD named as ggml_set_name left it, from the very next compute" "$(q "$db" "SELECT group_concat(graph_id || '=' ||
    tensor_name) FROM (SELECT graph_id, tensor_name FROM records WHERE name = 'ADD' AND (graph_id < 4) !=
    (tensor_name = 'z') ORDER BY graph_id)")" ""
# The name written directly before compute 8 shows once a verification walk has seen it; that walk notes it.
first=$(q "$db" "SELECT min(graph_id) FROM records WHERE name = 'SCALE' AND tensor_name = 'y_direct'")
expect_ge "the direct write shows in a later compute (the plan was kept)" "${first:-0}" 9
expect_ge "... no more than 15 computes after it" "$((8 + 15))" "${first:-99}"
expect "... in every compute from then on" "$(q "$db" "SELECT count(*) FROM records WHERE name = 'SCALE'
    AND graph_id >= $first AND tensor_name != 'y_direct'")" 0
expect "... and before it the SCALE kept its earlier name" "$(q "$db" "SELECT count(*) FROM records
    WHERE name = 'SCALE' AND graph_id < $first AND tensor_name != 'y'")" 0
expect "the trace notes that plans were turned off" "$(q "$db" "SELECT count(*) FROM notes
    WHERE text LIKE 'split plans off: a node of a split changed with no ggml call%'")" 1
# What the engine holds for a thread that timed CPU splits (the ops buffer alone is 128 KiB) is freed when the
# thread ends: the program's heap (malloc's bytes in use, all arenas) grows by less than that over 300 threads.
growth=$(sed -n 's/^heap growth over 300 threads: \(-\{0,1\}[0-9]*\) KiB$/\1/p' "$OUT/stdout")
expect_ge "a thread's CPU-split state is freed with it (heap grew ${growth:-?} KiB over 300 threads)" \
    "$((128 - ${growth:-99999}))" 0

# 70 threads alive at once, each computing one graph: the ring's 64 slots go to the main thread and 63 of them;
# the other 7 threads' records are dropped, counted, and record says why.
"$GGPROF" record -o "$OUT/together.db" -- "$OUT/split_plans" together > "$OUT/together.out" 2> "$OUT/together.err"
expect "record runs 70 threads at once" "$?:$(tail -n 1 "$OUT/together.out")" "0:ok"
expect "the graphs of the threads that had a slot are recorded" "$(q "$OUT/together.db" "SELECT count(*) FROM graphs")" 63
expect_ge "the others' records are counted as dropped" "$(q "$OUT/together.db" "SELECT value FROM meta
    WHERE key = 'dropped_records'")" 7
expect "record says they had no slot" "$(grep -c 'dropped because more threads recorded at once than the ring has slots (64)' \
    "$OUT/together.err")" 1
