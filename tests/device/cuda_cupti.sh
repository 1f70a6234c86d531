#!/usr/bin/env bash
# Device check (one H200, CUDA 13): CUDA kernel timing through CUPTI, on samples/cuda/kernels.cu under `ggprof record`.
# Needs build-device/ (tests/device/build.sh, carried). Prints ok/not ok lines, a short report and "N passed, N failed";
# the traces go to $OUT (the device tool's output folder), or /tmp/ggprof-device. See tests/device/README.md.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B="$ROOT/build-device"
cd "$ROOT"
export GGPROF="$B/bin/ggprof" GGPROF_ROOT="$ROOT" GGPROF_TEST_OUT="${OUT:-/tmp/ggprof-device}"
mkdir -p "$GGPROF_TEST_OUT"
log="$GGPROF_TEST_OUT/results.txt"

main() {
[ -x "$GGPROF" ] && [ -f "$B/lib/libggprof-cupti.so" ] && [ -x "$B/samples/cuda_kernels" ] || {
    echo "not ok - cuda_cupti: build-device/ is missing: run 'bash tests/device/build.sh' here and carry it"
    return 1
}

echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)"
echo "# $(ldd --version 2> /dev/null | head -1)"
# The copies in build-device/deps are used only for what this machine's loader cannot find.
deps="$GGPROF_TEST_OUT/deps"
mkdir -p "$deps"
for f in "$GGPROF" "$B/samples/opencl_kernels"; do
    ldd "$f" 2> /dev/null | awk '/not found/ { print $1 }'
done | sort -u | while read -r lib; do
    [ -e "$B/deps/$lib" ] && ln -sf "$B/deps/$lib" "$deps/$lib" && echo "# using build-device's copy of $lib"
done
export LD_LIBRARY_PATH="$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ldconfig -p 2> /dev/null | grep -q 'libcupti\.so\.13 ' && [ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]; then
    export GGPROF_CUPTI_LIB="$B/deps/cupti/libcupti.so.13"
    echo "# no libcupti.so.13 on this machine: using build-device's copy"
fi

. "$ROOT/tests/lib.sh"
. "$ROOT/tests/device/kernel_checks.sh"
sample="$B/samples/cuda_kernels"

"$sample" > "$OUT/plain.txt" 2> "$OUT/plain.err"
expect "the sample runs without the profiler" "$?" 0
grep -q '^results ok' "$OUT/plain.txt" || { sed 's/^/# /' "$OUT/plain.err"; return 1; }

# run_case LABEL CLOCK [VAR=VALUE...]: the sample under record with these variables, and every assertion on its
# trace; CLOCK is how the CUPTI library must say it read the clock.
run_case() {
    local l=$1 db="$OUT/$1.db" clock=$2
    shift 2
    # 1 MiB slots: a container's /dev/shm may be small (64 MiB by default), and the sample writes little.
    env "$@" timeout 60 "$GGPROF" record --ring-kib 1024 -o "$db" -- "$sample" > "$OUT/$l.txt" 2> "$OUT/$l.err"
    local rc=$?
    expect "$l: the sample exits 0 under record" "$rc" 0
    [ "$rc" -eq 0 ] || sed 's/^/#   stderr: /' "$OUT/$l.err" | head -20
    expect "$l: the sample's results and counts are unchanged under record" \
        "$(grep -v '^span ' "$OUT/$l.txt" | md5sum)" "$(grep -v '^span ' "$OUT/plain.txt" | md5sum)"
    local total want_total=0 nodes replays begin end
    read -r _ _ nodes _ replays < <(grep '^graph nodes' "$OUT/$l.txt")
    read -r _ begin end < <(grep '^span ' "$OUT/$l.txt")
    for k in vec_add saxpy scale_kernel; do
        n=$(awk -v k="$k" '$1 == "launched" && $2 == k { print $3 }' "$OUT/$l.txt")
        want_total=$((want_total + ${n:-0}))
        # scale_kernel is a template: its name is demangled (scale_kernel<float>) or, without a C++ runtime, mangled.
        expect "$l: $k: one kernel per launch or graph replay" "$(q "$db" "SELECT count(*) FROM kernels
            WHERE name = '$k' OR (name LIKE '%scale_kernel%' AND '$k' = 'scale_kernel')")" "$n"
    done
    total=$(q "$db" "SELECT count(*) FROM kernels")
    expect "$l: no kernel that the sample did not launch" "$total" "$want_total"
    expect "$l: the template's name is demangled" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE name LIKE 'void scale_kernel<float>(%'")" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE name LIKE '%scale_kernel%'")"
    check_kernel_trace "$db" "$l" cuda "$begin" "$end"
    # CUDA graph: each replay runs every kernel node once, with that node's id; one cudaGraphLaunch, one
    # correlation id per replay.
    expect "$l: graph kernels: nodes x replays, with node ids" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE graph_node != 0")" "$((nodes * replays))"
    expect "$l: one distinct graph node id per kernel node, each run once per replay" "$(q "$db" "SELECT count(*)
        || ' ' || min(n) || ' ' || max(n) FROM (SELECT count(*) AS n FROM kernels WHERE graph_node != 0
        GROUP BY graph_node)")" "$nodes $replays $replays"
    expect "$l: one correlation id per graph replay" "$(q "$db" "SELECT count(DISTINCT correlation) FROM kernels
        WHERE graph_node != 0")" "$replays"
    expect "$l: one correlation id per direct launch" "$(q "$db" "SELECT count(DISTINCT correlation) || ' '
        || count(*) || ' ' || min(correlation > 0) FROM kernels WHERE graph_node = 0")" \
        "$((want_total - nodes * replays)) $((want_total - nodes * replays)) 1"
    expect "$l: direct launches on two streams: vec_add and scale on one, saxpy on the other" "$(q "$db" "SELECT
        count(DISTINCT stream) || ' ' || count(DISTINCT CASE WHEN name = 'saxpy' THEN stream END) || ' '
        || count(DISTINCT CASE WHEN name != 'saxpy' THEN stream END) FROM kernels WHERE graph_node = 0")" "2 1 1"
    expect "$l: no ggml here: no kernel is attributed to a graph" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE graph_id IS NOT NULL OR split_id != -1 OR node_index != -1")" 0
    expect "$l: one exit note from the CUPTI library, counting every kernel" "$(q "$db" "SELECT count(*) FROM notes
        WHERE text = 'cuda: $total kernels, 0 attributed to ggml splits, 0 to their node; CUPTI dropped 0 records, 0 incomplete; 0 graph nodes unmapped (table full)'")" 1
    expect "$l: one clock note: $clock" "$(q "$db" "SELECT count(*) FROM notes WHERE text LIKE 'cuda: clock $clock;%'")" 1
    q "$db" "SELECT '# $l: ' || text FROM notes WHERE text LIKE 'cuda:%'"
    q "$db" "SELECT '#   ' || substr(name, 1, 40) || ': ' || count(*) || ' kernels, mean '
        || (sum(duration_ns) / count(*)) || ' ns, streams ' || group_concat(DISTINCT stream)
        FROM kernels GROUP BY name ORDER BY name"
    q "$db" "SELECT '#   ' || text FROM notes WHERE text NOT LIKE 'cuda:%'"
}

# CUPTI's clock set to CLOCK_MONOTONIC by its timestamp callback (the default), then CUPTI's own clock converted
# by ggprof's calibration: both must put every kernel inside the program's main().
run_case cuda_default "CLOCK_MONOTONIC by timestamp callback"
if [ "$(q "$OUT/cuda_default.db" "SELECT count(*) FROM kernels")" = 0 ]; then
    # Diagnosis: did the driver load the library when libggprof.so set CUDA_INJECTION64_PATH at start-up?
    run_case cuda_injection_explicit "CLOCK_MONOTONIC by timestamp callback" \
        CUDA_INJECTION64_PATH="$B/lib/libggprof-cupti.so"
    echo "# $(grep -h 'ggprof' "$OUT"/cuda_*.err | sort -u | head -5)"
fi
run_case cuda_cupti_clock "CUPTI''s own, calibrated" GGPROF_CUPTI_CLOCK=cupti

# OpenCL on the GPU, where the image has NVIDIA's OpenCL driver: the same test as on PoCL here.
icd=$(ldconfig -p 2> /dev/null | awk '/libnvidia-opencl\.so\.1 / { print $NF; exit }')
if [ -n "$icd" ]; then
    mkdir -p "$OUT/vendors" && echo "$icd" > "$OUT/vendors/nvidia.icd"
    OCL_ICD_VENDORS="$OUT/vendors" GGPROF_OPENCL_SAMPLE="$B/samples/opencl_kernels" bash tests/e2e/opencl.sh
    q "$GGPROF_TEST_OUT/opencl/cl.db" "SELECT '#   ' || text FROM notes" 2> /dev/null
else
    echo "# no NVIDIA OpenCL driver in this image: OpenCL on the GPU not checked"
fi
}

main 2>&1 | tee "$log"

. "$ROOT/tests/tally.sh"
tally "$log"
