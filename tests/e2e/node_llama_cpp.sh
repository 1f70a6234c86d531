# node-llama-cpp's prebuilt libraries (loaded with dlopen RTLD_LOCAL, a binary we did not build) under
# ggprof record: the same kind of records as our own llama.cpp build.
. "$(dirname "$0")/../lib.sh"

cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-script.mjs"
db="$OUT/node.db"
(cd "$NODE_PROJECT_DIR" && "$GGPROF" record -o "$db" -- node ggprof-script.mjs "$GGUF_DENSE" 8) > "$OUT/node.log" 2>&1
expect "record exits with node's status" "$?" 0
expect "the ggml found is node-llama-cpp's prebuilt one" \
    "$(q "$db" "SELECT count(*) FROM processes WHERE ggml_lib LIKE '%@node-llama-cpp/linux-x64/bins/%'")" 1
check_cpu_trace "$db" node
check_json "$OUT/node.json.gz" "$db" node
for op in MUL_MAT RMS_NORM ROPE GET_ROWS; do
    expect_ge "node: has $op" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0 AND name = '$op'")" 1
done
