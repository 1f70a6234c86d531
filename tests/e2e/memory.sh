# Memory: the buffers llama.cpp allocates, per backend and kind, against the sizes it prints itself; each compute
# buffer's peak and the tensors alive there (ggml-alloc's plan); weights and KV cache per layer; diff of -c and -ub;
# a ggml program that is not llama.cpp, with a graph allocator and with a scheduler.
. "$(dirname "$0")/../lib.sh"

# peak_check DB LABEL: every compute buffer has a peak whose tensors reach exactly its end (the plan ggprof read is
# the one that sized it), lie inside it, and overlap only where one was computed in place of another.
peak_check() {
    local db=$1 l=$2
    "$GGPROF" memory "$db" --peak --format json > "$db.peak.json"
    "$GGPROF" query "$db" "SELECT buffer_id, size, alignment FROM buffers WHERE kind = 'compute' AND size > 0" \
        > "$db.compute.txt"
    node -e '
        const fs = require("fs");
        const rows = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
        const bufs = fs.readFileSync(process.argv[2], "utf8").trim().split("\n").filter(Boolean).map((l) => l.split("|").map(Number));
        const up = (v, a) => Math.ceil(v / a) * a;
        let with_peak = 0, top_is_end = 0, inside = 0, overlaps = 0, bytes_le = 0, fill = 0;
        for (const [id, size, align] of bufs) {
            const live = rows.filter((r) => r.buffer_id === id).sort((a, b) => a.offset - b.offset);
            if (!live.length) continue;
            with_peak++;
            if (Math.max(...live.map((r) => r.offset + up(r.bytes, align))) === size) top_is_end++;
            if (live.every((r) => r.offset >= 0 && r.offset + r.bytes <= size)) inside++;
            let end = 0, sum = 0, padded = 0;
            live.forEach((r, i) => {
                if (i && r.offset === live[i - 1].offset) return; // in place: one block
                if (r.offset < end) overlaps++;
                end = Math.max(end, r.offset + r.bytes);
                sum += r.bytes;
                padded += up(r.bytes, align);
            });
            if (sum <= size) bytes_le++;
            // what is free between them at that moment (a block freed earlier, too small for what came next) is small
            if (padded <= size && size - padded <= size / 100) fill++;
        }
        console.log([bufs.length, with_peak, top_is_end, inside, overlaps, bytes_le, fill].join(" "));
    ' "$db.peak.json" "$db.compute.txt" > "$db.peak.check"
    read -r n with_peak top inside overlaps bytes_le fill < "$db.peak.check"
    expect_ge "$l: compute buffers" "${n:-0}" 1
    expect "$l: every compute buffer has a peak, its tensors listed" "${with_peak:-}" "$n"
    expect "$l: at the peak the tensors reach the buffer's end exactly (the plan that sized it)" "${top:-}" "$n"
    expect "$l: the tensors alive at the peak lie inside their buffer" "${inside:-}" "$n"
    expect "$l: no two tensors alive at the peak overlap (views and in-place results counted once)" "${overlaps:-}" 0
    expect "$l: the tensors alive at the peak add up to no more than the buffer" "${bytes_le:-}" "$n"
    expect "$l: ... and, with ggml-alloc's alignment padding, to within 1% of it (the rest: free between them)" "${fill:-}" "$n"
}

# ---------------------------------------------------------------- llama.cpp, dense and MoE
for model in dense moe; do
    gguf=$GGUF_DENSE
    [ $model = moe ] && gguf=$GGUF_MOE
    db="$OUT/$model.db"
    # -nr: the weights stay in the file llama.cpp maps. Where the CPU has AMX (an Intel Xeon with AMX_INT8), llama.cpp
    # otherwise copies half of them into an AMX buffer and the mapped file still counts whole, so the weights the
    # graphs read are 63% of the weights buffers, not the 99% checked below.
    "$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$gguf" -p "The quick brown fox" -n 6 -t 2 \
        --no-warmup -no-cnv -s 1 -v -nr > "$OUT/$model.log" 2>&1
    expect "$model: record exits 0" "$?" 0
    check_memory_vs_log "$db" "$OUT/$model.log" "$model"
    peak_check "$db" "$model"
    expect "$model: the fitting pass's buffers are not held at the peak (one KV and one compute buffer)" \
        "$(q "$db" "SELECT count(*) FROM buffers b, (SELECT peak FROM (SELECT max(alloc_ns) AS peak FROM buffers WHERE kind = 'compute'))
            WHERE b.size > 0 AND b.kind IN ('kv', 'compute') AND b.alloc_ns <= peak AND (b.free_ns IS NULL OR b.free_ns > peak)")" 2
    n_layer=$(q "$db" "SELECT count(DISTINCT node_index) FROM tensor_placement WHERE tensor_name LIKE 'cache_k_l%' AND node_index < 0")
    "$GGPROF" memory "$db" --layers --format json > "$OUT/$model.layers.json"
    read -r kv_layers kv_sum w_sum <<< "$(node -e '
        const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const kv = r.filter((x) => x.kind === "kv"), w = r.filter((x) => x.kind === "weights");
        console.log(new Set(kv.map((x) => x.layer)).size, kv.reduce((a, x) => a + x.bytes, 0), w.reduce((a, x) => a + x.bytes, 0));
    ' "$OUT/$model.layers.json")"
    expect_ge "$model: KV cache per layer, one row each" "${kv_layers:-0}" "${n_layer:-1}"
    expect "$model: the KV cache's layers add up to its buffer" "${kv_sum:-}" \
        "$(q "$db" "SELECT sum(size) FROM buffers WHERE kind = 'kv'")"
    expect "$model: the weights the graphs read fill their buffer (within 1%)" \
        "$(q "$db" "SELECT ${w_sum:-0} <= sum(size) AND ${w_sum:-0} >= 0.99 * sum(size) FROM buffers WHERE kind = 'weights'")" 1
    expect "$model: report has the memory section, computed as memory's" \
        "$("$GGPROF" report "$db" | grep -c "compute buffer $(q "$db" "SELECT printf('%.2f', size / 1048576.0) FROM buffers WHERE kind = 'compute'") MiB")" 1
done

# ---------------------------------------------------------------- diff: -c and -ub move the KV cache and the peak
rec() { # NAME ARGS...
    local n=$1
    shift
    "$GGPROF" record -q -o "$OUT/$n.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" \
        -n 2 -t 2 --no-warmup -no-cnv -s 1 "$@" > "$OUT/$n.log" 2>&1
}
rec c256 -c 256 && rec c1024 -c 1024 && rec ub512 -c 256 -ub 512 && rec ub32 -c 256 -ub 32 -b 32
expect "diff: the four runs record" "$?" 0
"$GGPROF" diff "$OUT/c256.db" "$OUT/c1024.db" > "$OUT/diff-c.txt"
expect "diff -c 256 / -c 1024: the KV cache grows fourfold" "$(awk 'NF == 5 && $1 == "CPU" && $2 == "kv" { print ($4 == 4 * $3) }' "$OUT/diff-c.txt")" 1
"$GGPROF" diff "$OUT/ub512.db" "$OUT/ub32.db" > "$OUT/diff-ub.txt"
expect "diff -ub 512 / -ub 32: the compute buffer shrinks" "$(awk 'NF == 5 && $1 == "CPU" && $2 == "compute" { print ($4 < $3 / 4) }' "$OUT/diff-ub.txt")" 1
expect "diff: both compute peaks named" "$(grep -c 'CPU compute peak: A [0-9.]* MiB at [A-Z_]* .*, B [0-9.]* MiB at [A-Z_]*' "$OUT/diff-ub.txt")" 1
expect "diff --format json: the memory rows" "$("$GGPROF" diff "$OUT/c256.db" "$OUT/c1024.db" --format json |
    node -e 'const d = JSON.parse(require("fs").readFileSync(0, "utf8")); const r = d.memory.find((x) => x.kind === "kv");
             console.log(r.b_bytes / r.a_bytes)')" 4

# ---------------------------------------------------------------- ggml programs that are not llama.cpp
build_ggml_program static_graph "$GGPROF_ROOT/samples/static_graph.c"
"$GGPROF" record -q -o "$OUT/gallocr.db" -- "$OUT/static_graph" -n 3 --gallocr > "$OUT/gallocr.log" 2>&1
expect "gallocr: the sample runs" "$?" 0
expect "gallocr: its inputs' buffer (read by the graph) and its graph allocator's compute buffer" \
    "$(q "$OUT/gallocr.db" "SELECT group_concat(kind, ' ') FROM (SELECT kind FROM buffers WHERE size > 0 ORDER BY kind)")" \
    "compute weights"
peak_check "$OUT/gallocr.db" gallocr
expect "gallocr: its peak holds the intermediate results (h1 and h2, at the second MUL_MAT)" \
    "$("$GGPROF" memory "$OUT/gallocr.db" --peak --format csv | tail -n +2 | cut -d, -f3,4 | sort | tr '\n' ' ')" "MUL_MAT,h1 MUL_MAT,h2 "

cc -std=c11 -O1 -Wall -Wextra -Werror -o "$OUT/threads" "$GGPROF_ROOT/samples/threads/threads.c" -pthread \
    -I"$LLAMA_SRC_DIR/ggml/include" -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base -Wl,-rpath,"$LLAMA_BIN_DIR" \
    2> "$OUT/cc-threads.log"
expect "threads: the sample builds" "$?" 0
"$GGPROF" record -q -o "$OUT/threads.db" -- "$OUT/threads" > "$OUT/threads.log" 2>&1
expect "threads: the sample runs" "$?" 0
expect "threads: one compute buffer per scheduler, each with its plan's scheduler" \
    "$(q "$OUT/threads.db" "SELECT count(*) = count(DISTINCT sched_id) AND count(*) >= 2 FROM plan_list WHERE sched_id > 0")" 1
peak_check "$OUT/threads.db" threads
cp "$OUT/dense.db" "$OUT/old.db"
sqlite3 "$OUT/old.db" "DROP VIEW buffers; DROP VIEW tensor_placement; DROP TABLE buffer_list; DROP TABLE placements;
    DROP TABLE plan_list; DROP TABLE device_memory; UPDATE meta SET value = '3' WHERE key = 'schema_version'"
expect "a trace of schema 3 (before memory) has none, said in one line; report has no memory section" \
    "$("$GGPROF" memory "$OUT/old.db" 2>&1 | grep -c '^No memory recorded'):$("$GGPROF" report "$OUT/old.db" | grep -c '^Memory')" 1:0
expect "memory: a JSON profile is refused, exit 2" "$("$GGPROF" memory "$OUT/dense.json.gz" > /dev/null 2>&1; echo $?)" 2
