#!/usr/bin/env bash
# The short sanitizer runs of `make test`: ggprof, libggprof.so and its plugins built with ASan+UBSan, then with
# TSan (make SAN=..., each in its own build folder), and a part of the suite run on each: the faults, hostile
# input, fork/exec and thread tests and one llama.cpp run under ASan+UBSan; the threads test under TSan. Every
# test line of the inner runs is passed on, prefixed. The whole suite: make test SAN=address,undefined (about
# 8 minutes here), make test SAN=thread (the thread tests; docs/reliability.md).
. "$(dirname "$0")/lib.sh"
ASAN_TESTS=(test_ llama_cpu faults fork_exec private_files hostile_names bad_input threads c_api ggml_profile)

for san in address,undefined thread; do
    build="build-san-${san//,/-}"
    rt=$(make -s -C "$GGPROF_ROOT" --no-print-directory SAN="$san" san-rt)
    make -s -C "$GGPROF_ROOT" SAN="$san" all unit > "$OUT/build-$san.log" 2>&1
    expect "SAN=$san: ggprof and libggprof.so build" "$?" 0
    if [ "$san" = thread ]; then tests=(threads); else tests=("${ASAN_TESTS[@]}"); fi
    GGPROF_BUILD=$build GGPROF_SAN=$san GGPROF_SAN_RT=$rt GGPROF_TEST_OUT="$OUT/$build" \
        bash "$GGPROF_ROOT/tests/run.sh" "${tests[@]}" > "$OUT/$san.log" 2>&1
    grep -E '^(ok|not ok) ' "$OUT/$san.log" | sed "s/^\(not ok\|ok\) - /\1 - SAN=$san: /"
    expect_ge "SAN=$san: the inner run passed tests" "$(grep -c '^ok ' "$OUT/$san.log")" 20
done
