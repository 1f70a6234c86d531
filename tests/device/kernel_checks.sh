# Invariants of a trace's device kernels (sourced after tests/lib.sh): tests/e2e/opencl.sh and tests/device/*.sh.
# check_kernel_trace DB LABEL API BEGIN_NS END_NS: BEGIN/END are CLOCK_MONOTONIC readings the program itself took at
# the start and end of its main(), so every kernel it ran lies between them on the host clock.
check_kernel_trace() {
    local db=$1 l=$2 api=$3 begin=$4 end=$5
    expect_ge "$l: kernels recorded" "$(q "$db" "SELECT count(*) FROM kernels")" 1
    expect "$l: every kernel is an $api kernel with a name" "$(q "$db" "SELECT count(*) FROM kernels
        WHERE api != '$api' OR name IS NULL OR name = ''")" 0
    expect "$l: every kernel lasts > 0 ns" "$(q "$db" "SELECT count(*) FROM kernels WHERE duration_ns <= 0")" 0
    expect "$l: every kernel lies inside the program's main() on the host clock" "$(q "$db" "SELECT count(*)
        FROM kernels WHERE start_ns < $begin OR start_ns + duration_ns > $end")" 0
    expect "$l: no kernel starts before the process was described" "$(q "$db" "SELECT count(*) FROM kernels k
        JOIN processes p ON p.pid = k.pid WHERE k.start_ns < p.start_ns")" 0
    # In order per queue/stream: each kernel starts after the previous one on its queue ended (the samples
    # enqueue on in-order queues and streams, and their CUDA graph is a chain).
    expect "$l: kernels in order per queue/stream (start >= previous end)" "$(q "$db" "SELECT count(*) FROM
        (SELECT start_ns, lag(start_ns + duration_ns) OVER (PARTITION BY pid, stream ORDER BY start_ns)
         AS prev_end FROM kernels) WHERE start_ns < prev_end")" 0
}
