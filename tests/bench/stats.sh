# Statistics shared by the benchmark scripts (sourced).
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
