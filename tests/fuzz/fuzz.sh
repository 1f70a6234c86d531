#!/usr/bin/env bash
# The fuzz targets, briefly (FUZZ_SECONDS each, default 15): libFuzzer with ASan and UBSan, from the seeds here
# (tests/fuzz/json: version-3 JSON; wire_seeds.c: one message of each kind; tests/fuzz/db: SQL that makes a real
# trace odd, with db.dict for the mutations; elf: real ELF files, /bin/true and three built here). A crash, a leak
# or undefined behaviour fails the target and leaves its input in $OUT. Longer runs: FUZZ_SECONDS=600 tests/run.sh
# fuzz.
. "$(dirname "$0")/../lib.sh"
S=${FUZZ_SECONDS:-15}
B="$GGPROF_ROOT/${GGPROF_BUILD:-build}"
make -s -C "$GGPROF_ROOT" fuzz > "$OUT/build.log" 2>&1
expect "the fuzz targets build (clang, libFuzzer)" "$?" 0

mkdir -p "$OUT/json" "$OUT/wire"
cp "$GGPROF_ROOT"/tests/fuzz/json/* "$OUT/json/"
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I"$GGPROF_ROOT/schema" -o "$OUT/wire_seeds" \
    "$GGPROF_ROOT/tests/fuzz/wire_seeds.c" && "$OUT/wire_seeds" "$OUT/wire"
expect "wire seeds written (one of each message kind)" "$(ls "$OUT/wire" | wc -l)" 16

# ELF seeds: /bin/true (stripped, PLT relocations) and, built here, a program whose .dynsym defines functions, the
# same with its .symtab, and a shared library.
mkdir -p "$OUT/elf"
cp /bin/true "$OUT/elf/true"
printf 'int fuzz_seed_fn(int x) { return x + 1; }\nint main(void) { return fuzz_seed_fn(-1); }\n' > "$OUT/seed.c"
cc -O1 -rdynamic -s -o "$OUT/elf/rdynamic" "$OUT/seed.c" && cc -O1 -o "$OUT/elf/symtab" "$OUT/seed.c" &&
    cc -O1 -shared -fPIC -s -o "$OUT/elf/lib.so" "$OUT/seed.c"
expect "elf seeds written (real ELF files)" "$(ls "$OUT/elf" | wc -l)" 4

mkdir -p "$OUT/db" "$OUT/trust"
cp "$GGPROF_ROOT"/tests/fuzz/db/* "$OUT/db/"
cp "$GGPROF_ROOT"/tests/fuzz/trust/* "$OUT/trust/"
export FUZZ_DB_BASE="$GGPROF_ROOT/samples/traces/llama-dense-f16.json.gz"

# A database input runs every analysis command (about 5 a second under ASan): it must at least run its seeds. An
# ELF input is parsed in microseconds: at least 10,000 mutations of the seeds.
declare -A min_runs=([json]=100 [wire]=100 [db]=$(ls "$OUT/db" | wc -l) [trust]=$(ls "$OUT/trust" | wc -l) [elf]=10000)
for t in json wire db trust elf; do
    extra=()
    [ "$t" = db ] || [ "$t" = trust ] && extra=(-dict="$GGPROF_ROOT/tests/fuzz/db.dict")
    (cd "$OUT" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$B/fuzz/fuzz_$t" -max_total_time="$S" -artifact_prefix="$OUT/" \
        -max_len=65536 -rss_limit_mb=2048 "${extra[@]}" "$OUT/$t" > "$OUT/$t.log" 2>&1)
    rc=$?
    runs=$(sed -n 's/^#\([0-9]*\).*DONE.*/\1/p' "$OUT/$t.log")
    expect "fuzz_$t: ${runs:-0} inputs in ${S}s, no crash, leak or undefined behaviour" \
        "$rc:$(grep -c 'ERROR: \|runtime error' "$OUT/$t.log")" "0:0"
    expect_ge "fuzz_$t: it ran" "${runs:-0}" "${min_runs[$t]}"
done
