# Vulkan dispatch times from timestamp queries (kernels/vulkan/): node-llama-cpp's prebuilt libggml-vulkan.so on
# lavapipe, recorded without --serialize; the layer must time every dispatch and change nothing else.
. "$(dirname "$0")/../lib.sh"
. "$GGPROF_ROOT/tests/device/kernel_checks.sh"

LIBDIR=$(cd "$(dirname "$GGPROF")/../lib" && pwd)
if [ ! -f "$LIBDIR/libggprof-vulkan.so" ] || [ ! -f "$LIBDIR/vulkan/ggprof_layer.json" ]; then
    ok "built without vulkan/vk_layer.h: no Vulkan layer to test (install libvulkan-dev)"
    exit 0
fi
export GGML_VK_VISIBLE_DEVICES=0 # ggml ignores CPU-type Vulkan devices unless asked for them
cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-script.mjs"
workload() { (cd "$NODE_PROJECT_DIR" && timeout 300 "$@" node ggprof-script.mjs "$GGUF_DENSE" 4 vulkan); }

workload "$GGPROF" record -o "$OUT/vt.db" > "$OUT/vt.out" 2> "$OUT/vt.err"
expect "recorded with the layer: the program succeeds" "$?" 0
GGPROF_VULKAN=0 workload "$GGPROF" record -o "$OUT/off.db" > "$OUT/off.out" 2> "$OUT/off.err"
expect "recorded with GGPROF_VULKAN=0: the program succeeds" "$?" 0
expect "the program's output is the same with and without the layer" "$(diff "$OUT/off.out" "$OUT/vt.out" && grep -c 'on vulkan' "$OUT/vt.out")" 1
expect "GGPROF_VULKAN=0: no kernels" "$(q "$OUT/off.db" "SELECT count(*) FROM kernels")" 0

db=$OUT/vt.db
check_kernel_trace "$db" "vulkan" vulkan 0 9223372036854775807
expect_ge "dispatches timed" "$(q "$db" "SELECT count(*) FROM kernels WHERE api = 'vulkan'")" 100
expect "every dispatch attributed to a split on the Vulkan backend" "$(q "$db" "SELECT count(*) FROM kernels k
    LEFT JOIN backends b ON b.pid = k.pid AND b.sched_id = k.sched_id AND b.id = k.backend_id
    WHERE k.graph_id IS NULL OR k.split_id = -1 OR b.name IS NULL OR b.name NOT LIKE 'Vulkan%'")" 0
expect "every dispatch named after its pipeline" "$(q "$db" "SELECT count(*) FROM kernels
    WHERE name NOT LIKE 'dispatch (pipeline %)'")" 0
# Device work runs after its launch returns: a dispatch starts after its split started (its command buffer was
# recorded there), and ends before the first wait for that backend that began after that (ggml's synchronize
# waits for everything submitted), or within the split when the backend waited inside it.
expect "dispatches start after their split started" "$(q "$db" "SELECT count(*) FROM kernels k JOIN split_list s
    ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id WHERE k.start_ns < s.start_ns")" 0
expect "dispatches end before the backend's next wait ends" "$(q "$db" "WITH w AS (SELECT pid, sched_id, backend_id,
    start_ns, start_ns + duration_ns AS end_ns FROM records WHERE name = 'backend_wait'),
    k AS (SELECT k.start_ns + k.duration_ns AS k_end, s.start_ns + s.duration_ns AS s_end,
      (SELECT min(w.end_ns) FROM w WHERE w.pid = k.pid AND w.sched_id = k.sched_id AND w.backend_id = k.backend_id
       AND w.start_ns >= s.start_ns) AS w_end
      FROM kernels k JOIN split_list s ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id)
    SELECT count(*) FROM k WHERE k_end > max(s_end, coalesce(w_end, 0))")" 0
expect "one clock note" "$(q "$db" "SELECT count(*) FROM notes WHERE text LIKE 'vulkan: device 0 clock by VK_EXT_calibrated_timestamps%'")" 1
expect "the dispatch count note matches the kernels" "$(q "$db" "SELECT count(*) FROM notes
    WHERE text LIKE 'vulkan: ' || (SELECT count(*) FROM kernels) || ' dispatches timed%'")" 1

# The layer outside `ggprof record`: enabled by hand, without libggprof.so, it only chains the calls.
# (A sanitized layer needs its runtime loaded first: ${GGPROF_SAN_RT:-}, empty in a normal build.)
workload env VK_LAYER_PATH="$LIBDIR/vulkan" VK_INSTANCE_LAYERS=VK_LAYER_GGPROF_timestamps LD_PRELOAD="${GGPROF_SAN_RT:-}" \
    ASAN_OPTIONS="$WORKLOAD_ASAN" > "$OUT/plain.out" 2> "$OUT/plain.err"
expect "layer without ggprof: the program succeeds" "$?" 0
expect "layer without ggprof: output unchanged" "$(diff "$OUT/off.out" "$OUT/plain.out" && echo same)" same
# And libggprof.so preloaded without GGPROF_RING adds no layer.
workload env LD_PRELOAD="$GGPROF_PRELOAD" ASAN_OPTIONS="$WORKLOAD_ASAN" sh -c 'echo "$VK_INSTANCE_LAYERS" >&2; exec "$@"' sh > "$OUT/noring.out" 2> "$OUT/noring.err"
expect "no GGPROF_RING: the program succeeds" "$?" 0
expect "no GGPROF_RING: no layer enabled" "$(head -n 1 "$OUT/noring.err")" ""
expect "no GGPROF_RING: output unchanged" "$(diff "$OUT/off.out" "$OUT/noring.out" && echo same)" same

# Pipelines the program names (ggml-vulkan does with GGML_VK_DEBUG_MARKERS) name their dispatches.
GGML_VK_DEBUG_MARKERS=1 workload "$GGPROF" record -o "$OUT/names.db" > "$OUT/names.out" 2> "$OUT/names.err"
expect "debug names: the program succeeds" "$?" 0
expect_ge "debug names: dispatches named after ggml's shaders" "$(q "$OUT/names.db" "SELECT count(*) FROM kernels
    WHERE name LIKE 'mul_mat%'")" 1
expect "debug names: every dispatch named" "$(q "$OUT/names.db" "SELECT count(*) FROM kernels WHERE name LIKE 'dispatch (%'")" 0

# Each dispatch joined to the node ggml-vulkan was recording (its ggml_is_empty(node) call, engine/interpose.c):
# every one has a node, and its shader is one of its node's op (a fused group's first node: RMS_NORM's
# rms_norm_mul, ADD's add_rms, ROPE's rope writing the cache in f16).
expect "node attribution: every dispatch joined to a node of its split" "$(q "$OUT/names.db" "SELECT count(*) FROM kernels k
    JOIN split_list s ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id
    WHERE k.node_index < s.node_start OR k.node_index >= s.node_start + s.n_nodes OR k.op IS NULL")" 0
expect "node attribution: each shader is its node's op" "$(q "$OUT/names.db" "SELECT count(*) || ' ' ||
    COALESCE(group_concat(DISTINCT op || '/' || name), '') FROM kernels WHERE NOT (
      (name GLOB 'mul_mat*' AND op IN ('MUL_MAT', 'MUL_MAT_ID')) OR (name GLOB 'rms_norm*' AND op = 'RMS_NORM') OR
      (name GLOB 'add_*' AND op = 'ADD') OR ((name GLOB 'flash_attn*' OR name GLOB 'fa_*') AND op = 'FLASH_ATTN_EXT') OR
      (name GLOB 'swiglu*' AND op = 'GLU') OR (name GLOB 'rope_*' AND op = 'ROPE') OR
      (name GLOB 'set_rows*' AND op = 'SET_ROWS') OR (name GLOB 'get_rows*' AND op = 'GET_ROWS'))")" "0 "
expect_ge "node attribution: the ops of a transformer layer on the GPU" "$(q "$OUT/names.db" "SELECT count(DISTINCT op)
    FROM kernels")" 8
# ... and each node's dispatches make its OP record (timing 4, device time): every dispatch's time in exactly one,
# on the Vulkan backend, so that top-ops and the roll-ups show the GPU's ops.
db=$OUT/vt.db
expect "device OP records: one per node that dispatched, with all of the dispatches' time" "$(q "$db" "SELECT
    (SELECT count(*) FROM records WHERE timing = 4) = (SELECT count(DISTINCT graph_id || ':' || node_index) FROM kernels)
    AND (SELECT sum(duration_ns) FROM records WHERE timing = 4) = (SELECT sum(duration_ns) FROM kernels)")" 1
expect "device OP records: on the Vulkan backend, named by their node's op" "$(q "$db" "SELECT count(*) FROM records r
    LEFT JOIN backends b ON b.pid = r.pid AND b.sched_id = r.sched_id AND b.id = r.backend_id
    WHERE r.timing = 4 AND (b.name NOT LIKE 'Vulkan%' OR r.type != 0 OR r.name = 'unknown')")" 0
"$GGPROF" top-ops "$db" --format csv > "$OUT/top-ops.csv"
expect "device OP records: top-ops lists Vulkan MUL_MAT" "$(grep -c '^MUL_MAT,Vulkan0,' "$OUT/top-ops.csv")" 1
