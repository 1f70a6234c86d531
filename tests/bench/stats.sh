# Statistics shared by the benchmark scripts, and tests/run.sh's idle check (sourced).
# median: the median of the numbers on standard input, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# geomean_ci: "GEOMEAN (LO-HI)" of the ratios on standard input (positive numbers, one per line): their geometric
# mean and its 95% interval (the mean of the logarithms, +- 1.96 standard errors, back through exp). For ratios of
# two noisy runs the arithmetic mean reads high, by about the square of a run's relative noise (0.3% on this VM).
geomean_ci() {
    awk '{ l = log($1); s += l; ss += l * l; n++ } END {
        m = s / n; sd = n > 1 ? sqrt((ss - n * m * m) / (n - 1)) : 0; h = 1.96 * sd / sqrt(n)
        printf "%.3f (%.3f-%.3f)", exp(m), exp(m - h), exp(m + h) }'
}
# alternate_pairs GGPROF DB: a `record --alternate` trace's adjacent scheduler graphs of the two kinds, one pair a
# line: "GRAPH_NS LEVEL_NS", the duration of the one recorded at level graph, then of the one at the level asked for
# (those have splits); the same graph computed one right after the other, under the same machine state.
alternate_pairs() {
    "$1" query "$2" "WITH k AS (SELECT g.pid, g.graph_id, g.duration_ns AS d, EXISTS (SELECT 1 FROM
        splits s WHERE s.pid = g.pid AND s.graph_id = g.graph_id) AS full FROM graphs g)
        SELECT CASE WHEN a.full THEN b.d ELSE a.d END, CASE WHEN a.full THEN a.d ELSE b.d END FROM k a JOIN k b
        ON b.pid = a.pid AND b.graph_id = a.graph_id + 1 WHERE a.full != b.full" | tr '|' ' '
}
# cpus_idle_pct: how idle all CPUs were over the next second, in % (/proc/stat's idle and iowait over user, nice,
# system, idle, iowait, irq, softirq and steal): the machine's state before a run that needs it idle.
cpus_idle_pct() {
    local t0 i0 t1 i1 cpu='$1 == "cpu" { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6; exit }'
    read -r t0 i0 < <(awk "$cpu" /proc/stat)
    sleep 1
    read -r t1 i1 < <(awk "$cpu" /proc/stat)
    echo $(( t1 > t0 ? 100 * (i1 - i0) / (t1 - t0) : 100 ))
}
