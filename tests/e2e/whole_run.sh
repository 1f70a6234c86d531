# The whole run accounted for (docs/findings.md, "Accounting"): on llama-completion (dense and MoE), llama-server
# (two requests with a 2 s wait between them), node-llama-cpp and samples/threads (not llama.cpp), report's
# categories add up to the wall time exactly, and that wall is record's fork to exit (processes_time, read here with
# sqlite3) within 1%; the server's wait is idle; llama-completion's prompt and generation agree with llama.cpp's own
# common_perf_print lines ("prompt eval time", "eval time", their token and run counts, "load time", "total time")
# within 5% or 0.5 ms, and loading and context_setup are the model loads' and context creations' spans.
. "$(dirname "$0")/../lib.sh"
# (acc and whole: lib.sh, shared with compat/matrix.sh's whisper-cli row)

# near A_MS B_NS: A (ms, llama.cpp's) and B (ns, ggprof's) within 5% or 0.5 ms.
near() {
    python3 -c 'import sys; a = float(sys.argv[1]); b = int(sys.argv[2]) / 1e6
print("yes" if abs(a - b) <= max(0.05 * a, 0.5) else "no: llama.cpp %.3f ms, ggprof %.3f ms" % (a, b))' "$1" "$2"
}

# ---- llama-completion, dense and MoE, with llama.cpp's own timings (--perf)
for m in dense moe; do
    gguf=$GGUF_DENSE
    [ $m = moe ] && gguf=$GGUF_MOE
    db=$OUT/completion-$m.db
    "$GGPROF" record -q -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$gguf" -p "The quick brown fox jumps over" \
        -n 12 -t 2 --no-warmup -no-cnv -s 1 --perf > "$OUT/completion-$m.log" 2>&1
    expect "completion $m: record exits with its status" "$?" 0
    read -r pn pt gn gr lo ll lt cs <<< "$(acc "$db" phases.prompt_ns phases.prompt_tokens phases.generation_ns \
        phases.generation_runs categories.loading phases.llama_load_ns phases.llama_total_ns categories.context_setup)"
    whole "$db" "completion $m"
    expect_ge "completion $m: loading measured" "$lo" 1
    # common_perf_print: prompt eval time = X ms / N tokens; eval time = Y ms / M runs (llama-context.cpp: a
    # llama_decode of more than one token is prompt eval, of one token eval, each to the synchronize after it)
    read -r px pN <<< "$(sed -n 's/.*prompt eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) tokens.*/\1 \2/p' "$OUT/completion-$m.log")"
    read -r ex eM <<< "$(sed -n 's/.*[^t] eval time = *\([0-9.]*\) ms \/ *\([0-9]*\) runs.*/\1 \2/p' "$OUT/completion-$m.log")"
    expect "completion $m: prompt tokens as llama.cpp counted them" "$pt" "${pN:-none}"
    expect "completion $m: generation runs as llama.cpp counted them" "$gr" "${eM:-none}"
    expect "completion $m: prompt time agrees with llama.cpp's prompt eval time" "$(near "${px:-0}" "${pn:-0}")" yes
    expect "completion $m: generation time agrees with llama.cpp's eval time" "$(near "${ex:-0}" "${gn:-0}")" yes
    # load time = X ms (v0.4.0: its last perf reset, else the model load's start, to the end of the first decode)
    # and total time = Y ms (that start to common_perf_print's reading): ggprof's phases computed the same way
    lx=$(sed -n 's/.*[^a-z]load time = *\([0-9.]*\) ms.*/\1/p' "$OUT/completion-$m.log" | head -n1)
    tx=$(sed -n 's/.*total time = *\([0-9.]*\) ms.*/\1/p' "$OUT/completion-$m.log" | head -n1)
    expect "completion $m: llama.cpp's load time agrees with ggprof's" "$(near "${lx:-0}" "${ll%None}")" yes
    expect "completion $m: llama.cpp's total time agrees with ggprof's" "$(near "${tx:-0}" "${lt%None}")" yes
    # loading is the model-load calls' time, context set-up the context creations' (the engine's spans, read here
    # with sqlite3: regions of depth -1)
    expect "completion $m: loading is the model loads' spans" "$lo" "$(sqlite3 "$db" "SELECT total(duration_ns) FROM
        regions WHERE depth = -1 AND name = 'llama_model_load_from_file'" | sed 's/\.0$//')"
    expect "completion $m: context_setup is the context creations' spans" "$cs" "$(sqlite3 "$db" "SELECT
        total(duration_ns) FROM regions WHERE depth = -1 AND name = 'llama_init_from_model'" | sed 's/\.0$//')"
    expect "completion $m: time to first token is its parts added up" "$(python3 -c 'import json,sys
p=max(json.load(open(sys.argv[1]))["accounting"], key=lambda p: p["wall_ns"]); t=p.get("ttft") or {}
print("yes" if t and t["ns"] == sum(v for k, v in t.items() if k != "ns") else "no: %s" % t)' "$db.json")" yes
    expect "completion $m: the report has the section" "$("$GGPROF" report "$db" | grep -c -e '^=== Where the time went' \
        -e '^    time to first token' -e '^    per generated token')" 3
done

# ---- llama-server: two requests 2 s apart; the decoding thread's wait between them is idle
db=$OUT/server.db
serve_two_requests "$db" -q
expect "server: record ends when the server does" "$?" 0
read -r idle <<< "$(acc "$db" categories.idle)"
whole "$db" server
expect_ge "server: the 2 s between the requests is idle (>= 1.5 s)" "${idle%None}" 1500000000

# ---- node-llama-cpp
cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-script-whole-run.mjs"
db=$OUT/node.db
(cd "$NODE_PROJECT_DIR" && "$GGPROF" record -q -o "$db" -- node ggprof-script-whole-run.mjs "$GGUF_DENSE" 4) > "$OUT/node.log" 2>&1
expect "node: record exits with node's status" "$?" 0
read -r gn <<< "$(acc "$db" phases.generation_runs)"
whole "$db" node
expect_ge "node: generation runs" "$gn" 1

# ---- a ggml program that is not llama.cpp: samples/threads
build_ggml_program threads "$GGPROF_ROOT/samples/threads/threads.c"
db=$OUT/threads.db
"$GGPROF" record -q -o "$db" -- "$OUT/threads" 4 20 > "$OUT/threads.out" 2>&1
expect "threads sample: record exits with its status" "$?" 0
read -r cpu <<< "$(acc "$db" categories.compute.CPU)"
whole "$db" "threads sample"
expect_ge "threads sample: compute.CPU measured" "$cpu" 1
