# The scheduler's partial MoE copies: llama-completion with node-llama-cpp's prebuilt Vulkan backend (loaded
# through GGML_BACKEND_PATH, on lavapipe), --cpu-moe and a prompt of 32+ tokens, so that MUL_MAT_ID is
# offloaded while its expert weights stay on the host: only the experts in use are copied, and the copy
# records carry exactly those bytes (whole experts, plus ggml's padding after the last one of a run).
. "$(dirname "$0")/../lib.sh"

VK="$NODE_PROJECT_DIR/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan/libggml-vulkan.so"
db="$OUT/moe.db"
GGML_VK_VISIBLE_DEVICES=0 GGML_BACKEND_PATH="$VK" timeout 300 "$GGPROF" record -o "$db" -- \
    "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_MOE" -p "$(seq -s ' ' 1 40)" -n 3 -t 2 --no-warmup -no-cnv \
    -ngl 99 --cpu-moe -dev Vulkan0 > "$OUT/log" 2>&1
expect "llama-completion runs on Vulkan with the experts on the CPU" "$?" 0
# Expert copies: records on the *_exps tensors; wait_ns holds a partial copy's offset (docs/trace-database.md).
experts="FROM events e JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id
    WHERE e.type = 1 AND n.tensor_name LIKE '%_exps.weight%'"
stride="json_extract(n.nb_src, '\$[0][2]')"
expect_ge "expert weights copied to the GPU" "$(q "$db" "SELECT count(*) $experts")" 3
expect "only some experts: each copy is smaller than the tensor" "$(q "$db" "SELECT count(*) $experts AND e.bytes >= n.nbytes")" 0
expect "copies start at an expert boundary" "$(q "$db" "SELECT count(*) $experts AND e.wait_ns % $stride != 0")" 0
expect "copies are whole experts, plus at most 512 bytes of padding" "$(q "$db" "SELECT count(*) $experts
    AND (e.bytes % $stride) NOT IN (0, min($stride, 512))")" 0
expect "no expert copied twice for one tensor in one graph" "$(q "$db" "SELECT count(*) FROM (SELECT e.graph_id,
    n.tensor_name, sum(e.bytes / $stride) AS k, max(json_extract(n.ne_src, '\$[0][2]')) AS n_expert $experts
    GROUP BY 1, 2 HAVING k > n_expert)")" 0
expect_ge "device-to-host copies of the results" "$(q "$db" "SELECT count(*) FROM records WHERE name = 'copy_D2H'")" 1
