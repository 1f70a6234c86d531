# A workload that writes over the ring's header and its slot's head and tail partway through its run
# (tests/e2e/ring_hostile.c): record survives it, exits with the workload's status, keeps the records from before
# the damage, says what it dropped, and leaves no file in /dev/shm.
. "$(dirname "$0")/../lib.sh"

build_ggml_program ring_hostile
db="$OUT/hostile.db"
rm -f "$db"
"$GGPROF" record -o "$db" -- "$OUT/ring_hostile" > "$OUT/out" 2> "$OUT/err" &
collector=$!
wait "$collector"
expect "record exits with the workload's status" "$?" 7
expect "the workload saw its records read before it wrote over the ring" "$(grep -c 'drained before the damage: yes' \
    "$OUT/out")" 1
expect "record did not crash (no internal error, no full disk)" "$(grep -c 'internal\|filled up\|Bad address' "$OUT/err")" 0
expect "no ring file left in /dev/shm" "$(ls /dev/shm/ggprof-record-"$collector"-* 2> /dev/null | wc -l)" 0
# 20 graphs on the main thread and 1 on a thread of its own were read before the damage: all of them are kept.
expect_ge "the graphs from before the damage are kept" "$(q "$db" "SELECT count(*) FROM graphs")" 21
expect "... with their ops (2 a graph)" "$(q "$db" "SELECT count(*) FROM (SELECT graph_id FROM events WHERE type = 0
    GROUP BY pid, graph_id HAVING count(*) = 2) WHERE graph_id < 21")" 21
expect "the trace's notes say what was dropped and why" "$(q "$db" "SELECT count(*) FROM notes
    WHERE text LIKE 'ring header corrupted by the workload: % slots skipped%n_slots slot_cap'")" 1
expect_ge "... counted in meta" "$(q "$db" "SELECT value FROM meta WHERE key = 'ring_corrupt_slots'")" 1
expect "record warns, in one line" "$(grep -c '^ggprof: record: warning: ring header corrupted by the workload' "$OUT/err")" 1
"$GGPROF" report "$db" > "$OUT/report.txt" 2>&1
expect "report reads the trace" "$?" 0
expect "report shows the note" "$(grep -c 'ring header corrupted by the workload' "$OUT/report.txt")" 1
