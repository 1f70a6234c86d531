# tally LOG: the closing lines of a test run (sourced by tests/run.sh and tests/device/*.sh): the failures again,
# then "N passed, N failed"; true when something passed and nothing failed.
tally() {
    local passed failed
    passed=$(grep -c '^ok ' "$1")
    failed=$(grep -c '^not ok ' "$1")
    echo
    grep '^not ok ' "$1" || true
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}
