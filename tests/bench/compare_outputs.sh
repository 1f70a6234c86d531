#!/usr/bin/env bash
# Benchmark helper (not a test): every analysis command and export of two ggprof builds, output byte for byte, on
# the sample traces and on the trace databases given: the proof that a change to how the analyzer reads a trace
# (memory, speed) left what it prints alone. Prints one line per output that differs and a summary; exit 1 when
# any differs.
# usage: tests/bench/compare_outputs.sh OLD_GGPROF NEW_GGPROF [TRACE...]
#   e.g. make BUILD=build-before all on main first, then:
#        tests/bench/compare_outputs.sh build-before/bin/ggprof build/bin/ggprof /tmp/big.db
#   (tests/bench/big_db.sh makes a database of N records)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OLD=$(realpath "$1") NEW=$(realpath "$2")
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
traces=("$ROOT"/samples/traces/*.json* "$@")
same=0 differ=0
# run NAME ARGS...: both builds; ARGS may hold @OUT@, an output file compared alongside stdout.
run() {
    local name=$1
    shift
    for side in old new; do
        local bin=$OLD
        [ "$side" = new ] && bin=$NEW
        local args=("${@//@OUT@/$tmp/$side.out}")
        rm -f "$tmp/$side.out"
        (cd "$tmp" && "$bin" "${args[@]}" > "$tmp/$side.stdout" 2> "$tmp/$side.stderr"; echo "$?" > "$tmp/$side.rc")
        sed -i "s|$tmp/$side.out|OUT|g" "$tmp/$side.stdout" "$tmp/$side.stderr"
    done
    local what
    for what in stdout rc out; do
        [ -e "$tmp/old.$what" ] || [ -e "$tmp/new.$what" ] || continue
        if cmp -s "$tmp/old.$what" "$tmp/new.$what"; then
            same=$((same + 1))
        else
            differ=$((differ + 1))
            echo "DIFFERS: $name ($what)"
        fi
    done
}
for t in "${traces[@]}"; do
    b=$(basename "$t")
    run "$b report" report "$t"
    run "$b report --format json" report "$t" --format json
    run "$b top-ops" top-ops "$t" -n 0
    run "$b top-kernels" top-kernels "$t"
    run "$b inefficiency" inefficiency "$t"
    for by in layer block phase graph request; do
        run "$b rollup --by $by" rollup "$t" --by "$by"
        run "$b rollup --by $by --ops --format csv" rollup "$t" --by "$by" --ops --format csv
    done
    run "$b diff" diff "$t" "$t" -n 0 --format csv
    run "$b diff table" diff "$t" "$t"
    run "$b export --html" export "$t" --html @OUT@
    run "$b export --chrome" export "$t" --chrome @OUT@
    run "$b export --json" export "$t" --json @OUT@
    run "$b export --otlp" export "$t" --otlp @OUT@
    run "$b export --test-file" export "$t" --test-file @OUT@
done
echo "compare_outputs: $same outputs the same, $differ differ"
[ "$differ" = 0 ]
