# The upstream profiler's C API, served by libggprof.so linked ahead of an unmodified ggml: a program profiles
# a window of computes on a scheduler with the BLAS and CPU backends, reads the records, writes, resets.
. "$(dirname "$0")/../lib.sh"

BUILD_DIR=$(cd "$(dirname "$GGPROF")/.." && pwd)
cc -std=c11 -O1 -Wall -Wextra -Werror -o "$OUT/profile_window" "$GGPROF_ROOT/samples/api/profile_window.c" \
    -I"$GGPROF_ROOT/engine/include" -I"$LLAMA_SRC_DIR/ggml/include" -L"$BUILD_DIR/lib" -lggprof \
    -L"$LLAMA_BIN_DIR" -lggml -lggml-base -lm -Wl,-rpath,"$BUILD_DIR/lib" -Wl,-rpath,"$LLAMA_BIN_DIR" 2> "$OUT/cc.log"
expect "the sample builds against ggprof's ggml-profiler.h and links -lggprof ahead of ggml" "$?" 0
(cd "$OUT" && LD_PRELOAD=${GGPROF_SAN_RT:-} ASAN_OPTIONS=$WORKLOAD_ASAN ./profile_window "$OUT/window.json" "$OUT/window.txt") > "$OUT/stdout" 2> "$OUT/stderr"
expect "the sample's own checks pass (records accumulate, reset, disable)" "$?:$(tail -n 1 "$OUT/stdout")" "0:ok"
read -r _ n _ _ per _ ops _ _ blas < <(grep '^records:' "$OUT/stdout")
expect "records of three computes" "$n" "$((per * 3))"
expect "one BLAS MUL_MAT per compute, timed node by node" "$blas" 3
expect_ge "CPU ops per compute (RMS_NORM, ADD, SCALE, SOFT_MAX)" "$((per - 1))" 4
expect "print_profiling wrote the console summary" "$(grep -c '^=== Profiling Summary ===' "$OUT/stderr")" 1
expect "export_profiling_json: v3 with every record" "$(node -e '
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    console.log(d.version === 3 && d.total_records === d.records.length ? d.records.length : -1)' "$OUT/window.json")" "$n"
expect "export_profiling_text: the three sections" "$(grep -c '^=== ' "$OUT/window.txt")" 3
"$GGPROF" report "$OUT/window.json" > /dev/null
expect "ggprof report reads what the API wrote" "$?" 0

# Under ggprof record the same program's BLAS split gets serialized OP records inside the split.
"$GGPROF" record -o "$OUT/rec.db" -- "$OUT/profile_window" "$OUT/w2.json" "$OUT/w2.txt" > /dev/null 2>&1
expect "record runs the API program" "$?" 0
expect "BLAS ops recorded with the serialized timing method, every compute" "$(q "$OUT/rec.db" "SELECT count(*) FROM records r
    JOIN backends b ON b.pid = r.pid AND b.sched_id = r.sched_id AND b.id = r.backend_id
    WHERE b.name = 'BLAS' AND r.name = 'MUL_MAT' AND r.timing = 3")" 8
expect "serialized records lie inside their split" "$(q "$OUT/rec.db" "SELECT count(*) FROM events e JOIN split_list s
    ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id WHERE e.timing = 3
    AND (e.start_ns < s.start_ns OR e.start_ns + e.duration_ns > s.start_ns + s.duration_ns)")" 0
