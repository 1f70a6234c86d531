# Statistics shared by the benchmark scripts (sourced).
# median: the median of the numbers on standard input, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# mean_ci: "MEAN +- HALF" of the numbers on standard input, HALF the half-width of their mean's 95% interval.
mean_ci() {
    awk '{ s += $1; ss += $1 * $1; n++ } END {
        m = s / n; sd = n > 1 ? sqrt((ss - n * m * m) / (n - 1)) : 0; printf "%.3f +- %.3f", m, 1.96 * sd / sqrt(n) }'
}
