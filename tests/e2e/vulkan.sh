# Vulkan, with node-llama-cpp's prebuilt libggml-vulkan.so on Debian's lavapipe (a CPU Vulkan driver): splits on
# the Vulkan backend, host-to-device copies with their bytes, the host's waits, and with --serialize per-node
# times (each node computed alone, then synchronized) inside their splits.
. "$(dirname "$0")/../lib.sh"

export GGML_VK_VISIBLE_DEVICES=0 # ggml ignores CPU-type Vulkan devices unless asked for them
cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-script.mjs"
run() { # DB [record options]
    local db=$1
    shift
    (cd "$NODE_PROJECT_DIR" && timeout 300 "$GGPROF" record "$@" -o "$db" -- node ggprof-script.mjs "$GGUF_DENSE" 4 vulkan)
}
LLAMA_LOG_LEVEL=info run "$OUT/vk.db" > "$OUT/vk.log" 2>&1
expect "node-llama-cpp runs on Vulkan under record" "$?:$(grep -c 'on vulkan' "$OUT/vk.log")" "0:1"
# memory: the Vulkan0 (device) and Vulkan_Host (pinned) buffers, as llama.cpp printed them through node-llama-cpp
check_memory_vs_log "$OUT/vk.db" "$OUT/vk.log" "vulkan: memory" 5
expect "vulkan: memory: weights, KV cache and compute on Vulkan0" "$(q "$OUT/vk.db" "SELECT group_concat(kind, ' ') FROM
    (SELECT DISTINCT kind FROM buffers WHERE name = 'Vulkan0' AND size > 0 ORDER BY kind)")" "compute kv weights"
vq() { q "$1" "SELECT $2 FROM records r JOIN backends b ON b.pid = r.pid AND b.sched_id = r.sched_id
    AND b.id = r.backend_id WHERE b.name LIKE 'Vulkan%' $3"; }
expect_ge "splits on the Vulkan backend" "$(q "$OUT/vk.db" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid
    AND b.sched_id = s.sched_id AND b.id = s.backend_id WHERE b.name LIKE 'Vulkan%' AND b.device_type = 1")" 4
expect_ge "host-to-device copies into Vulkan" "$(vq "$OUT/vk.db" "count(*)" "AND r.name = 'copy_H2D'")" 4
expect "copy bytes equal the copied tensors' bytes" "$(q "$OUT/vk.db" "SELECT count(*) FROM events e JOIN nodes n
    ON n.pid = e.pid AND n.node_id = e.node_id WHERE e.type = 1 AND e.bytes != n.nbytes")" 0
expect_ge "the host's waits for the GPU" "$(vq "$OUT/vk.db" "count(*)" "AND r.name = 'backend_wait'")" 1
expect "no op times guessed for the GPU without --serialize: only the device's own (timing 4)" \
    "$(vq "$OUT/vk.db" "count(*)" "AND r.type = 0 AND r.timing != 4")" 0

run "$OUT/vks.db" --serialize > "$OUT/vks.log" 2>&1
expect "--serialize: the program still succeeds" "$?" 0
for op in MUL_MAT RMS_NORM FLASH_ATTN_EXT ROPE GLU; do
    expect_ge "--serialize: $op timed on Vulkan" "$(vq "$OUT/vks.db" "count(*)" "AND r.type = 0 AND r.name = '$op' AND r.timing = 3")" 1
done
expect "--serialize: node times lie inside their split" "$(q "$OUT/vks.db" "SELECT count(*) FROM events e JOIN split_list s
    ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id WHERE e.timing = 3
    AND (e.start_ns < s.start_ns OR e.start_ns + e.duration_ns > s.start_ns + s.duration_ns)")" 0
expect "--serialize: and do not overlap" "$(q "$OUT/vks.db" "SELECT count(*) FROM events a JOIN events b ON a.pid = b.pid
    AND a.graph_id = b.graph_id AND a.split_id = b.split_id AND a.rowid < b.rowid AND a.timing = 3 AND b.timing = 3
    AND b.start_ns < a.start_ns + a.duration_ns")" 0
expect "--serialize: every node of every Vulkan split timed once" "$(q "$OUT/vks.db" "SELECT count(*) FROM (SELECT pid, graph_id,
    node_index FROM events WHERE timing = 3 GROUP BY 1, 2, 3 HAVING count(*) > 1)")" 0
