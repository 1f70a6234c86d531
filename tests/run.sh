#!/usr/bin/env bash
# Runs every test: the unit binaries, then the end-to-end scripts against the fixture (tests/fixture.sh).
# usage: tests/run.sh [PATTERN...]   (only tests whose name contains one of the PATTERNs)
# Each test prints TAP-style "ok - NAME" / "not ok - NAME: why" lines; the last line is "N passed, N failed".
# Run by hand (not by `make test`, which names the build in GGPROF_BUILD), it first brings build/ up to date
# (make all unit). The fixture (10-25 minutes the first time) is built only when a selected test needs it: the
# end-to-end scripts, the compatibility matrix and the sanitizer runs do; unit tests, layering, one_definition,
# docs_versions, schema_doc, rules and fuzz do not.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
patterns=("$@")
wanted() { # NAME: true when no pattern was given or NAME contains one
    [ ${#patterns[@]} -eq 0 ] && return 0
    local p
    for p in "${patterns[@]}"; do case "$1" in *"$p"*) return 0 ;; esac; done
    return 1
}
export GGPROF="$ROOT/${GGPROF_BUILD:-build}/bin/ggprof" GGPROF_ROOT="$ROOT"
export GGPROF_TEST_OUT=${GGPROF_TEST_OUT:-$ROOT/${GGPROF_BUILD:-build}/test-out}
# A sanitized build (make test SAN=...): any finding stops the process that has it, so the test that ran it fails.
if [ -n "${GGPROF_SAN:-}" ]; then
    export GGPROF_SAN GGPROF_SAN_RT
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    # The profiled programs are not instrumented: their own synchronisation (OpenMP, ggml's atomic barriers) is
    # invisible to TSan, so what it saw of their memcpy and locks would be reported as races that are not. Only
    # the calls ggprof's instrumented code makes are checked.
    export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1:ignore_noninstrumented_modules=1}
fi
rm -rf "$GGPROF_TEST_OUT"
mkdir -p "$GGPROF_TEST_OUT"
log="$GGPROF_TEST_OUT/results.txt"
: > "$log"
if [ -n "${GGPROF_GOLDEN_UPDATE:-}" ]; then
    echo "# GGPROF_GOLDEN_UPDATE is not read: the goldens are rewritten with GGPROF_UPDATE_GOLDEN=1 (tests/README.md)"
fi
if [ -z "${GGPROF_BUILD:-}" ]; then
    echo "# make all unit"
    if ! make --no-print-directory all unit > "$GGPROF_TEST_OUT/make.log" 2>&1; then
        echo "not ok - build: make all unit failed ($GGPROF_TEST_OUT/make.log)" | tee -a "$log"
        tail -n 20 "$GGPROF_TEST_OUT/make.log" | sed 's/^/#   /'
    fi
fi

run() { # NAME CMD...: runs one test program, keeps its ok/not ok lines
    local name=$1 out="$GGPROF_TEST_OUT/$1.out" err="$GGPROF_TEST_OUT/$1.stderr"
    shift
    echo "# $name"
    "$@" > "$out" 2> "$err"
    local rc=$?
    cat "$out" | tee -a "$log"
    if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$out"; then
        echo "not ok - $name: exited $rc" | tee -a "$log"
    fi
    if [ "$rc" -ne 0 ] || grep -q '^not ok' "$out"; then
        tail -n 20 "$err" | sed 's/^/#   /'
    fi
}

for t in "${GGPROF_BUILD:-build}"/tests/test_*; do
    [ -x "$t" ] || continue
    wanted "$(basename "$t")" && run "$(basename "$t")" "$t"
done

# The layers of the sources (docs/how-it-works.md, "Layers").
wanted layering && run layering bash tests/layering.sh
# One definition of the label fallbacks and of llama.cpp's region names (a second copy fails it).
wanted one_definition && run one_definition bash tests/one_definition.sh
# The versions and build dependencies the docs state, against the code.
wanted docs_versions && run docs_versions bash tests/docs_versions.sh
# docs/trace-database.md's column lists against the trace database's DDL.
wanted schema_doc && run schema_doc bash tests/schema_doc.sh
# The rules' fast tests: small hand-built traces against expected findings (tests/rules/; no fixture).
wanted rules && run rules bash tests/rules/run.sh
# The fuzz targets, briefly (tests/fuzz/).
wanted fuzz && run fuzz bash tests/fuzz/fuzz.sh

# The tests that run on the fixture: the end-to-end scripts, the compatibility matrix, the sanitizer runs.
e2e=()
for t in tests/e2e/*.sh; do
    name=$(basename "$t" .sh)
    wanted "$name" && e2e+=("$name")
done
want_matrix=0 want_san=0
wanted compat-matrix && want_matrix=1
[ -z "${GGPROF_SAN:-}" ] && wanted sanitizers && want_san=1

if [ ${#e2e[@]} -eq 0 ] && [ $want_matrix = 0 ] && [ $want_san = 0 ]; then
    : # nothing selected needs the fixture: do not build it
elif ! fixture_env=$(bash tests/fixture.sh); then
    echo "not ok - fixture: tests/fixture.sh failed" | tee -a "$log"
else
    while IFS='=' read -r k v; do [ -n "$k" ] && export "$k=$v"; done <<< "$fixture_env"
    # Some end-to-end tests measure the machine (contention's idle run, placement's ranking of a live recording,
    # try's reruns): another busy process makes ggprof rightly report contention there. Said first, so that such a
    # failure reads as what it is.
    if [ ${#e2e[@]} -gt 0 ]; then
        . "$ROOT/tests/bench/stats.sh"
        idle=$(cpus_idle_pct)
        echo "# CPUs idle over 1 s before the end-to-end tests: $idle%"
        [ "$idle" -lt 90 ] && echo "# the machine is busy: the tests that measure it (contention, placement's findings, try) may fail"
    fi
    for name in ${e2e[@]+"${e2e[@]}"}; do
        run "e2e-$name" bash "tests/e2e/$name.sh"
    done
    # Every real ggml build of the compatibility matrix (docs/compatibility.md).
    [ $want_matrix = 1 ] && run compat-matrix bash tests/compat/matrix.sh
    # A part of the suite again on sanitized builds (tests/sanitizers.sh); not inside a sanitized run itself.
    [ $want_san = 1 ] && run sanitizers bash tests/sanitizers.sh
fi

. "$(dirname "$0")/tally.sh"
tally "$log"
