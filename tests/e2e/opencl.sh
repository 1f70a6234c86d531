# OpenCL kernel timing (PoCL here): every kernel the sample enqueued is in the trace, named, on the host clock.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../device/kernel_checks.sh"
cd "$GGPROF_ROOT"

sample=${GGPROF_OPENCL_SAMPLE:-} # prebuilt (the device check, where there may be no compiler): no build here
if [ -z "$sample" ]; then
    # cl_abi.h is ggprof's own copy of the OpenCL ABI: it must agree with Khronos' headers (values and prototypes).
    cc -std=c11 -Wall -Wextra -Werror -Ikernels/opencl -fsyntax-only samples/opencl/abi_check.c 2> "$OUT/abi.log"
    expect "kernels/opencl/cl_abi.h agrees with Khronos' CL/cl.h" "$?" 0
    sample="$OUT/opencl_kernels"
    cc -std=c11 -Wall -Wextra -Werror -O2 -o "$sample" samples/opencl/kernels.c -lOpenCL -lm 2> "$OUT/cc.log"
    expect "the OpenCL sample builds" "$?" 0
fi
[ -x "$sample" ] || exit 1

"$sample" > "$OUT/plain.txt" 2> "$OUT/plain.err"
expect "the sample runs without the profiler" "$?" 0
# record_case LABEL [VAR=VALUE...]: the sample under record, and every assertion on its trace.
record_case() {
    local l=$1 db="$OUT/$1.db" begin end n total
    shift
    env "$@" "$GGPROF" record -o "$db" -- "$sample" > "$OUT/$l.txt" 2> "$OUT/$l.err"
    expect "$l: the sample exits 0 under record" "$?" 0
    expect "$l: the sample's results and counts are unchanged under record" \
        "$(grep -v '^span ' "$OUT/$l.txt" | md5sum)" "$(grep -v '^span ' "$OUT/plain.txt" | md5sum)"
    expect "$l: the sample checked its results" "$(grep -c '^results ok' "$OUT/$l.txt")" 1
    for k in vec_add mat_mul fill_task; do
        n=$(awk -v k="$k" '$1 == "enqueued" && $2 == k { print $3 }' "$OUT/$l.txt")
        expect_ge "$l: $k: the sample enqueued some" "$n" 1
        expect "$l: $k: one kernel per enqueue, named" "$(q "$db" "SELECT count(*) FROM kernels
            WHERE name = '$k'")" "$n"
    done
    expect "$l: no kernel that the sample did not enqueue" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE name NOT IN ('vec_add', 'mat_mul', 'fill_task')")" 0
    read -r _ begin end < <(grep '^span ' "$OUT/$l.txt")
    check_kernel_trace "$db" "$l" opencl "$begin" "$end"
    expect "$l: two queues: vec_add and fill_task on one, mat_mul on the other" "$(q "$db" "SELECT
        count(DISTINCT stream) || ' ' || count(DISTINCT CASE WHEN name = 'mat_mul' THEN stream END) || ' '
        || count(DISTINCT CASE WHEN name != 'mat_mul' THEN stream END) FROM kernels")" "2 1 1"
    expect "$l: no ggml here: no kernel is attributed to a graph" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE graph_id IS NOT NULL OR split_id != -1 OR node_index != -1")" 0
    # The clock report: how the device clock was read, and the check of every kernel's QUEUED stamp against
    # the host's bracket of its clEnqueue call (the numbers vary; that every kernel is counted does not).
    total=$(q "$db" "SELECT count(*) FROM kernels")
    expect "$l: one clock note for the device, counting every kernel" "$(q "$db" "SELECT count(*) FROM notes
        WHERE text LIKE 'opencl: device 0 (%): $total kernels; clock by %'")" 1
    expect "$l: no kernel went untimed" "$(q "$db" "SELECT count(*) FROM notes
        WHERE text LIKE 'opencl: kernels not timed%' OR text LIKE 'opencl: kernel timing off%'")" 0
    echo "# $l: $(q "$db" "SELECT text FROM notes WHERE text LIKE 'opencl: device%'")"
    # Kernels no ggml split launched are counted in a note, with why (docs/backends.md, "Device ops").
    expect "$l: one note counts the kernels outside any ggml split" "$(q "$db" "SELECT count(*) FROM notes
        WHERE text LIKE 'device: $total opencl kernels (% ms of device time) ran outside any ggml split:%'")" 1
}

# The best clock the platform offers (PoCL: markers on a private queue), then the last fall-back: the kernels'
# own QUEUED stamps against their clEnqueue calls.
record_case cl
expect "cl: the clock was read by the best method this platform has" "$(q "$OUT/cl.db" "SELECT count(*) FROM notes
    WHERE text LIKE '%clock by clGetDeviceAndHostTimer +-%' OR text LIKE '%clock by markers +-%'")" 1
record_case cl_enqueue_clock GGPROF_OPENCL_CLOCK=enqueue
expect "cl_enqueue_clock: the clock was read from the kernels' stamps" "$(q "$OUT/cl_enqueue_clock.db" "SELECT
    count(*) FROM notes WHERE text LIKE '%clock by kernel stamps +-%'")" 1

# Outside `ggprof record` the engine leaves OpenCL alone: same output, no ring, nothing added.
LD_PRELOAD=$GGPROF_PRELOAD ASAN_OPTIONS=$WORKLOAD_ASAN "$sample" > "$OUT/preload.txt" 2> "$OUT/preload.err"
expect "with the engine preloaded but no ring, the sample runs unchanged" \
    "$?:$(grep -v '^span ' "$OUT/preload.txt" | md5sum):$(wc -c < "$OUT/preload.err")" \
    "0:$(grep -v '^span ' "$OUT/plain.txt" | md5sum):0"
