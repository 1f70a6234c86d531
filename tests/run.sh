#!/usr/bin/env bash
# Runs every test: the unit binaries, then the end-to-end scripts against the fixture (tests/fixture.sh).
# usage: tests/run.sh [PATTERN]   (only tests whose file name contains PATTERN)
# Each test prints TAP-style "ok - NAME" / "not ok - NAME: why" lines; the last line is "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
pattern=${1:-}
export GGPROF="$ROOT/${GGPROF_BUILD:-build}/bin/ggprof" GGPROF_ROOT="$ROOT"
export GGPROF_TEST_OUT=${GGPROF_TEST_OUT:-$ROOT/${GGPROF_BUILD:-build}/test-out}
rm -rf "$GGPROF_TEST_OUT"
mkdir -p "$GGPROF_TEST_OUT"
log="$GGPROF_TEST_OUT/results.txt"
: > "$log"

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
    case "$(basename "$t")" in *"$pattern"*) run "$(basename "$t")" "$t" ;; esac
done

# The layers of the sources (docs/how-it-works.md, "Layers").
case "layering" in *"$pattern"*) run layering bash tests/layering.sh ;; esac
# The fuzz targets, briefly (tests/fuzz/).
case "fuzz" in *"$pattern"*) run fuzz bash tests/fuzz/fuzz.sh ;; esac

if ! fixture_env=$(bash tests/fixture.sh); then
    echo "not ok - fixture: tests/fixture.sh failed" | tee -a "$log"
else
    while IFS='=' read -r k v; do [ -n "$k" ] && export "$k=$v"; done <<< "$fixture_env"
    for t in tests/e2e/*.sh; do
        name=$(basename "$t" .sh)
        case "$name" in *"$pattern"*) run "e2e-$name" bash "$t" ;; esac
    done
    # Every real ggml build of the compatibility matrix (docs/compatibility.md).
    case "compat-matrix" in *"$pattern"*) run compat-matrix bash tests/compat/matrix.sh ;; esac
fi

passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^not ok ' "$log")
echo
grep '^not ok ' "$log" || true
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
