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
# Pipelines ggml-vulkan names (record sets GGML_VK_DEBUG_MARKERS) name their dispatches.
expect_ge "kernel names by default: dispatches named after ggml's shaders" "$(q "$db" "SELECT count(*) FROM kernels
    WHERE name LIKE 'mul_mat%'")" 1
expect "kernel names by default: every dispatch named" "$(q "$db" "SELECT count(*) FROM kernels
    WHERE name LIKE 'dispatch (%'")" 0
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

# GGPROF_VULKAN_NAMES=0: the program's environment untouched, so its pipelines have no names; the layer names
# each dispatch after its pipeline's handle order.
# With GGPROF_DEVICE_NODES=0 too: dispatches joined to their split only, no device OP record, and a note says why.
GGPROF_VULKAN_NAMES=0 GGPROF_DEVICE_NODES=0 workload "$GGPROF" record -o "$OUT/nonames.db" > "$OUT/nonames.out" \
    2> "$OUT/nonames.err"
expect "GGPROF_VULKAN_NAMES=0: the program succeeds" "$?" 0
expect "GGPROF_VULKAN_NAMES=0: every dispatch named after its pipeline's number" "$(q "$OUT/nonames.db" "SELECT
    count(*) FROM kernels WHERE name NOT LIKE 'dispatch (pipeline %)'")" 0
expect_ge "GGPROF_VULKAN_NAMES=0: dispatches timed" "$(q "$OUT/nonames.db" "SELECT count(*) FROM kernels")" 100
expect "GGPROF_DEVICE_NODES=0: dispatches on splits, none on a node, no device OP record" "$(q "$OUT/nonames.db" "SELECT
    sum(graph_id IS NULL), sum(node_index >= 0), (SELECT count(*) FROM records WHERE timing = 4) FROM kernels")" "0|0|0"
expect "GGPROF_DEVICE_NODES=0: one note counts the dispatches not joined to a node, with why" "$(q "$OUT/nonames.db" "SELECT
    count(*) FROM notes WHERE text LIKE 'device: ' || (SELECT count(*) FROM kernels) || ' vulkan kernels (% ms) in '
    || '% splits not joined to a node: no node was being recorded at the dispatch (GGPROF_DEVICE_NODES=0%'")" 1

# Each dispatch joined to the node ggml-vulkan was recording (its ggml_is_empty(node) call, engine/interpose.c):
# every one has a node, and its shader is one of its node's op (a fused group's first node: RMS_NORM's
# rms_norm_mul, ADD's add_rms, ROPE's rope writing the cache in f16).
expect "node attribution: every dispatch joined to a node of its split" "$(q "$OUT/vt.db" "SELECT count(*) FROM kernels k
    JOIN split_list s ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id
    WHERE k.node_index < s.node_start OR k.node_index >= s.node_start + s.n_nodes OR k.op IS NULL")" 0
expect "node attribution: each shader is its node's op" "$(q "$OUT/vt.db" "SELECT count(*) || ' ' ||
    COALESCE(group_concat(DISTINCT op || '/' || name), '') FROM kernels WHERE NOT (
      (name GLOB 'mul_mat*' AND op IN ('MUL_MAT', 'MUL_MAT_ID')) OR (name GLOB 'rms_norm*' AND op = 'RMS_NORM') OR
      (name GLOB 'add_*' AND op = 'ADD') OR ((name GLOB 'flash_attn*' OR name GLOB 'fa_*') AND op = 'FLASH_ATTN_EXT') OR
      (name GLOB 'swiglu*' AND op = 'GLU') OR (name GLOB 'rope_*' AND op = 'ROPE') OR
      (name GLOB 'set_rows*' AND op = 'SET_ROWS') OR (name GLOB 'get_rows*' AND op = 'GET_ROWS'))")" "0 "
expect_ge "node attribution: the ops of a transformer layer on the GPU" "$(q "$OUT/vt.db" "SELECT count(DISTINCT op)
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

# Fused groups, named as the CPU's are (RMS_NORM+MUL): ggml-vulkan skips a node it fused into the one before
# without asking ggml_is_empty about it, and the head's OP record carries the group. The shader tells the same
# story independently: every rms_norm_mul dispatch's record is an RMS_NORM+MUL group, and there are some.
fused_checks() { # LABEL DB
    local l=$1 db=$2
    expect_ge "$l: fused groups: rms_norm_mul dispatches" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE name GLOB 'rms_norm_mul*'")" 1
    expect "$l: fused groups: each rms_norm_mul dispatch's record is RMS_NORM+MUL" "$(q "$db" "SELECT count(*)
        FROM kernels k LEFT JOIN records r ON r.pid = k.pid AND r.graph_id = k.graph_id AND r.node_index = k.node_index
        AND r.timing = 4 WHERE k.name GLOB 'rms_norm_mul*' AND COALESCE(r.extra, '') NOT GLOB 'RMS_NORM+MUL*'")" 0
    # a group's head is its record's op, and no dispatch was joined to a node the group says was fused away
    expect "$l: fused groups: labels start with the record's own op" "$(q "$db" "SELECT count(*) FROM records
        WHERE timing = 4 AND extra IS NOT NULL AND extra NOT GLOB name || '+*'")" 0
    expect "$l: fused groups: no dispatch on a fused member" "$(q "$db" "SELECT count(*) FROM records r JOIN kernels k
        ON k.pid = r.pid AND k.graph_id = r.graph_id AND k.node_index = r.fused_index WHERE r.timing = 4
        AND r.fused_index >= 0")" 0
    "$GGPROF" top-ops "$db" --format csv > "$OUT/$l-top-ops.csv"
    expect "$l: top-ops lists Vulkan MUL_MAT and the RMS_NORM+MUL group" "$(grep -cE '^(MUL_MAT|RMS_NORM\+MUL),Vulkan0,' \
        "$OUT/$l-top-ops.csv")" 2
    "$GGPROF" rollup "$db" --by layer --format csv > "$OUT/$l-layers.csv"
    expect_ge "$l: rollup --by layer: Vulkan time in each layer" "$(grep -c 'Vulkan0' "$OUT/$l-layers.csv")" \
        "$(q "$db" "SELECT count(DISTINCT tensor_name) FROM records WHERE tensor_name GLOB 'attn_norm-*'")"
    # The roofline takes device ops as it takes the CPU's: with a roof for Vulkan0, every MUL_MAT group has a roof%.
    "$GGPROF" inefficiency "$db" --roof Vulkan0=10,10 --format csv -n 0 > "$OUT/$l-ineff.csv"
    expect "$l: inefficiency: Vulkan MUL_MAT groups, each with a roof%" "$(awk -F, '$1 == "MUL_MAT" && $2 == "Vulkan0" {
        n++; if ($6 == "") bad++ } END { print (n > 0) " " bad + 0 }' "$OUT/$l-ineff.csv")" "1 0"
    # Device time in the report: busy and idle from the kernels, all of it joined to nodes.
    "$GGPROF" report "$db" > "$OUT/$l-report.txt"
    expect "$l: report: the Vulkan backend's device time, all joined to nodes" "$(grep -cE \
        '^  Backend [0-9]+ \(Vulkan0\), pid [0-9]+: [0-9]+ kernels, 100\.0% of their time joined to a graph node$' \
        "$OUT/$l-report.txt")" 1
    expect "$l: report: every device split's kernels all joined to nodes" "$(awk '/^    splits: / { sub(/,/, "", $2);
        print ($2 > 0 && $2 == $NF) ? "yes" : $0 }' "$OUT/$l-report.txt")" yes
    expect "$l: report: busy and idle add up to the time in flight" "$(awk '/^    busy /{ b = $2; f = $6; for (k = 1; k < NF; k++) if ($k == "idle") i = $(k + 1);
        d = b + i - f; print (d < 0.02 && d > -0.02) ? "yes" : "no " b " + " i " != " f }' "$OUT/$l-report.txt")" yes
    expect "$l: report: busy is the union of the kernels" "$(awk '/^    busy /{ print $2 }' "$OUT/$l-report.txt")" \
        "$(q "$db" "WITH k AS (SELECT start_ns AS a, start_ns + duration_ns AS b FROM kernel_list WHERE graph_id IS NOT NULL),
            m AS (SELECT a, b, max(b) OVER (ORDER BY a, b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pb FROM k),
            g AS (SELECT a, b, sum(CASE WHEN pb IS NULL OR a > pb THEN 1 ELSE 0 END) OVER (ORDER BY a, b) AS grp FROM m)
            SELECT printf('%.2f', sum(e - s) / 1e6) FROM (SELECT min(a) AS s, max(b) AS e FROM g GROUP BY grp)")"
}
fused_checks nlc-3.21.1 "$OUT/vt.db"

# The timelines: the GPU's ops in a lane of their own under the Vulkan backend's host lane, "Vulkan0 (device)",
# holding every device OP record, in the HTML page and in the Chrome trace.
"$GGPROF" export "$OUT/vt.db" --html "$OUT/vt.html" --chrome "$OUT/vt.json"
n_dev=$(q "$OUT/vt.db" "SELECT count(*) FROM records WHERE timing = 4")
expect "html: Vulkan device lanes hold every device OP record, the host lanes none" "$(node -e '
    const s = require("fs").readFileSync(process.argv[1], "utf8");
    const d = JSON.parse(s.match(/<script id="ggprof-data" type="application\/json">([\s\S]*?)<\/script>/)[1]);
    const dev = d.lanes.filter((l) => /^Vulkan0.* \(device\)$/.test(l.name));
    console.log(dev.length > 0, dev.reduce((a, l) => a + l.n, 0))' "$OUT/vt.html")" "true $n_dev"
expect "chrome: Vulkan device rows hold every device OP record" "$(node -e '
    const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const ev = t.traceEvents || t;
    const rows = new Set(ev.filter((e) => e.ph === "M" && e.name === "thread_name" && /^Vulkan0.*\(device\)/.test(e.args.name))
        .map((e) => e.pid + ":" + e.tid));
    const x = ev.filter((e) => e.ph === "X" && rows.has(e.pid + ":" + e.tid));
    console.log(x.length, x.every((e) => e.cat === "op"))' "$OUT/vt.json")" "$n_dev true"

# A second build: node-llama-cpp 3.22.1's prebuilt ggml-vulkan (a later llama.cpp), the same checks.
if [ -d "${NODE_VULKAN2_DIR:-}/node_modules/@node-llama-cpp/linux-x64-vulkan" ]; then
    cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_VULKAN2_DIR/ggprof-script.mjs"
    (cd "$NODE_VULKAN2_DIR" && timeout 300 "$GGPROF" record -o "$OUT/vt2.db" node ggprof-script.mjs "$GGUF_DENSE" 4 vulkan) \
        > "$OUT/vt2.out" 2> "$OUT/vt2.err"
    expect "nlc-3.22.1: recorded on Vulkan: the program succeeds" "$?$(grep -c 'on vulkan' "$OUT/vt2.out")" 01
    db=$OUT/vt2.db
    expect_ge "nlc-3.22.1: dispatches timed" "$(q "$db" "SELECT count(*) FROM kernels")" 100
    expect "nlc-3.22.1: every dispatch joined to a node of its split" "$(q "$db" "SELECT count(*) FROM kernels k
        JOIN split_list s ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id
        WHERE k.node_index < s.node_start OR k.node_index >= s.node_start + s.n_nodes OR k.op IS NULL")" 0
    expect "nlc-3.22.1: no dispatch outside a split" "$(q "$db" "SELECT count(*) FROM kernels WHERE graph_id IS NULL")" 0
    expect "nlc-3.22.1: each shader is its node's op" "$(q "$db" "SELECT count(*) || ' ' ||
        COALESCE(group_concat(DISTINCT op || '/' || name), '') FROM kernels WHERE NOT (
          (name GLOB 'mul_mat*' AND op IN ('MUL_MAT', 'MUL_MAT_ID')) OR (name GLOB 'rms_norm*' AND op = 'RMS_NORM') OR
          (name GLOB 'add_*' AND op = 'ADD') OR ((name GLOB 'flash_attn*' OR name GLOB 'fa_*') AND op = 'FLASH_ATTN_EXT') OR
          (name GLOB 'swiglu*' AND op = 'GLU') OR (name GLOB 'rope_*' AND op = 'ROPE') OR
          (name GLOB 'set_rows*' AND op = 'SET_ROWS') OR (name GLOB 'get_rows*' AND op = 'GET_ROWS'))")" "0 "
    expect "nlc-3.22.1: device OP records hold all of the dispatches' time" "$(q "$db" "SELECT
        (SELECT sum(duration_ns) FROM records WHERE timing = 4) = (SELECT sum(duration_ns) FROM kernels)")" 1
    fused_checks nlc-3.22.1 "$db"
    # Two builds' runs diffed: the GPU's ops side by side, op by op.
    "$GGPROF" diff "$OUT/vt.db" "$db" --format csv > "$OUT/vt-diff.csv"
    expect "diff 3.21.1 vs 3.22.1: Vulkan MUL_MAT and RMS_NORM (its groups by their head, as the CPU's) in both runs" "$(awk -F, '$1 == "by_op" &&
        ($3 == "MUL_MAT" || $3 == "RMS_NORM") && $8 == "Vulkan0" && $9 > 0 && $10 > 0 { print $3 }' "$OUT/vt-diff.csv" |
        sort -u | paste -sd' ')" "MUL_MAT RMS_NORM"
else
    ok "# SKIP no NODE_VULKAN2_DIR (tests/fixture.sh installs node-llama-cpp 3.22.1's Vulkan build)"
fi
