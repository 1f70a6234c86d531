# GGML_PROFILE without the collector: libggprof.so preloaded writes the upstream profiler's outputs itself
# (console summary, text report, JSON v3, gzip), when the scheduler is freed or the program ends.
. "$(dirname "$0")/../lib.sh"

run_profiled() { # GGML_PROFILE-VALUE STDOUT-FILE [extra llama-completion args]
    local value=$1 out=$2
    shift 2
    LD_PRELOAD=$GGPROF_PRELOAD ASAN_OPTIONS=$WORKLOAD_ASAN GGML_PROFILE=$value "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 6 -t 2 \
        --no-warmup -no-cnv "$@" > "$out" 2> "$out.err"
}

for value in 1 stdout ""; do
    run_profiled "$value" "$OUT/console-$value.txt"
    expect "GGML_PROFILE='$value': program exits 0" "$?" 0
    expect "GGML_PROFILE='$value': one console summary on stdout" \
        "$(grep -c '^=== Profiling Summary ===' "$OUT/console-$value.txt")" 1
    expect "GGML_PROFILE='$value': MUL_MAT on the CPU in it" \
        "$(grep -c '^  \[OP  \] backend 1 MUL_MAT ' "$OUT/console-$value.txt")" 1
done

run_profiled "$OUT/profile.txt" "$OUT/txt.out"
for section in '=== Profiling Summary ===' '=== Per-Backend Summary ===' '=== Operations (sorted by total time) ==='; do
    expect ".txt: has '$section'" "$(grep -c -F "$section" "$OUT/profile.txt")" 1
done
expect ".txt: nothing on stdout but the program's text" "$(grep -c 'Profiling Summary' "$OUT/txt.out")" 0

run_profiled "$OUT/profile.json" "$OUT/json.out"
expect ".json: plain JSON, version 3" "$(node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    console.log(d.version === 3 && d.records.length > 0 && d.records.length === d.total_records)' "$OUT/profile.json")" true
run_profiled "$OUT/profile.json.gz" "$OUT/gz.out"
expect ".json.gz: gzip" "$(gzip -t "$OUT/profile.json.gz" && echo ok)" ok
"$GGPROF" report "$OUT/profile.json.gz" > "$OUT/gz.report"
expect ".json.gz: ggprof report reads it" "$?" 0
expect "the profile covers every decoded batch (prompt + 5 tokens)" \
    "$(q "$OUT/profile.json.gz" "SELECT count(DISTINCT graph_id) FROM records WHERE sched_id = (SELECT max(sched_id) FROM records)")" 6

# Killed before it could free anything: the collector writes what the program recorded.
LD_PRELOAD=$GGPROF_PRELOAD ASAN_OPTIONS=$WORKLOAD_ASAN GGML_PROFILE="$OUT/killed.json" "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Once" \
    -n 100000 --ignore-eos -t 2 --no-warmup -no-cnv > /dev/null 2>&1 &
pid=$!
sleep 2
kill -9 "$pid"
wait "$pid" 2> /dev/null
for _ in $(seq 1 50); do [ -s "$OUT/killed.json" ] && break; sleep 0.2; done
expect_ge "a killed program still gets its profile" \
    "$(q "$OUT/killed.json" "SELECT count(*) FROM records WHERE type = 0")" 10

GGML_PROFILE="$OUT/ignored.json" "$GGPROF" record -o "$OUT/rec.db" -- "$LLAMA_BIN_DIR/llama-completion" \
    -m "$GGUF_DENSE" -p "Hi" -n 2 -t 2 --no-warmup -no-cnv > /dev/null 2> "$OUT/rec.err"
expect "under ggprof record GGML_PROFILE is ignored with a note" "$(grep -c 'GGML_PROFILE=.* is ignored' "$OUT/rec.err")" 1
expect "... and writes nothing" "$(ls "$OUT/ignored.json" 2> /dev/null | wc -l)" 0
