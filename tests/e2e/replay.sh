# From a trace to test-backend-ops: `export --test-file` writes the trace's op cases as the fixture's
# test-backend-ops reads them, and `replay` runs them alone (perf mode) beside their in-situ time.
. "$(dirname "$0")/../lib.sh"
TBO="$LLAMA_BIN_DIR/test-backend-ops"

for m in dense moe; do
    model=$GGUF_DENSE
    [ "$m" = moe ] && model=$GGUF_MOE
    "$GGPROF" record -q -o "$OUT/$m.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$model" -p "Hello world, this is" \
        -n 4 -t 2 -no-cnv > /dev/null 2>&1
    "$GGPROF" export "$OUT/$m.db" --test-file "$OUT/$m.txt" > "$OUT/$m.export" 2>&1
    expect "$m: export --test-file exits 0" "$?" 0
    n=$(wc -l < "$OUT/$m.txt")
    expect_ge "$m: cases written" "$n" 10
    # OP TYPE NE*4 16 PARAMS*16 NSRC (TYPE NE*4 NB*4)*NSRC NAME BACKEND: every line has exactly its fields.
    expect "$m: every line has the fields its source count says, the backend last" "$(awk '{ if (NF != 26 + 9 * $24 ||
        $NF != "CPU") bad++ } END { print bad + 0 }' "$OUT/$m.txt")" 0
    expect "$m: the export says how many cases went to the file" "$(grep -c "^# $OUT/$m.txt: $n cases" "$OUT/$m.export")" 1
done
expect "dense: only the CPU's fused RMS_NORM+MUL pairs are skipped" "$(grep '^# skipped' "$OUT/dense.export" |
    grep -vc 'RMS_NORM+MUL .*(fused')" 0
expect_ge "moe: the strided expert-weight GET_ROWS is skipped, with why" "$(grep -c '^# skipped GET_ROWS .*strided index' \
    "$OUT/moe.export")" 1
expect_ge "moe: MUL_MAT_ID cases are written (expert ids strided by row only)" "$(awk '$0 ~ /ffn_moe_(gate|down|up)/' \
    "$OUT/moe.txt" | wc -l)" 1

# Every line runs in test-backend-ops perf mode, and test mode runs every case (its comparison of CPU with CPU
# fails on NaNs of its own generic op: SET_ROWS' unwritten rows, random fully-masked attention rows).
"$TBO" perf -b CPU --test-file "$OUT/moe.txt" > "$OUT/moe.perf" 2>&1
expect "moe: test-backend-ops perf accepts every line" "$?:$(grep -c 'us/run' "$OUT/moe.perf")" "0:$(wc -l < "$OUT/moe.txt")"
"$TBO" test -b CPU --test-file "$OUT/dense.txt" > "$OUT/dense.test" 2>&1
rc=$?
expect "dense: test-backend-ops test runs every case, no crash" "$([ "$rc" -le 1 ] && echo ran):$(grep -ac \
    '): .*\(OK\|FAIL\)' "$OUT/dense.test")" "ran:$(wc -l < "$OUT/dense.txt")"

# replay: every case of the dense trace, alone (the test-backend-ops named: replay never takes the trace's folder), beside its in-situ time; the results go into the trace.
"$GGPROF" replay "$OUT/dense.db" --test-backend-ops "$TBO" -n 0 --format csv > "$OUT/replay.csv" 2> "$OUT/replay.err"
expect "replay exits 0" "$?" 0
expect "replay: a row per case of the test file" "$(($(wc -l < "$OUT/replay.csv") - 1))" "$(wc -l < "$OUT/dense.txt")"
expect "replay: MUL_MAT first (the largest share)" "$(sed -n 2p "$OUT/replay.csv" | cut -d, -f2)" MUL_MAT
expect "replay: every case ran alone and has its ratio" "$(q "$OUT/dense.db" "SELECT count(*) FROM replay
    WHERE isolated_ns > 0 AND ratio > 0")" "$(wc -l < "$OUT/dense.txt")"
expect "replay: rows in decreasing share" "$(q "$OUT/dense.db" "SELECT count(*) FROM replay a JOIN replay b
    ON b.case_id = a.case_id + 1 WHERE b.share > a.share")" 0
# The cases' runs and the skipped pairs' runs add up to the trace's OP records.
skipped=$(grep '^# skipped' "$OUT/replay.err" | sed 's/.*: \([0-9]*\) runs.*/\1/' | awk '{ s += $1 } END { print s + 0 }')
expect "replay: case runs + skipped runs = the trace's OP records" "$(( $(q "$OUT/dense.db" "SELECT sum(count)
    FROM replay") + skipped ))" "$(q "$OUT/dense.db" "SELECT count(*) FROM records WHERE type = 0")"
# MUL_MAT is never skipped: its cases' runs times their in-situ means give back the trace's MUL_MAT time.
expect "replay: in-situ means are the trace's (MUL_MAT time to the microsecond)" "$(q "$OUT/dense.db" "SELECT
    abs(round((SELECT sum(insitu_ns * count) FROM replay WHERE op = 'MUL_MAT') / 1000) -
        round((SELECT sum(duration_ns) FROM records WHERE type = 0 AND name = 'MUL_MAT') / 1000.0)) <= 1")" 1
"$GGPROF" replay "$OUT/dense.db" --test-backend-ops /nonexistent/test-backend-ops > /dev/null 2> "$OUT/bad.err"
expect "replay: a missing test-backend-ops is a one-line error" "$?:$(wc -l < "$OUT/bad.err")" "2:1"

# A prompt of 32+ tokens sends the big products to the BLAS backend: their cases replay on BLAS. One thread and no
# warm-up: the 42-token products are then the largest cases by their work alone (with two threads on a busy
# machine, a preempted thread can make a one-token product wait longer in its barrier than they compute). -nr: no
# AMX copy of the weights (a CPU with AMX_INT8), which BLAS cannot read.
"$GGPROF" record -q -o "$OUT/blas.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p "$(printf 'word %.0s' $(seq 40))" -n 1 -t 1 --no-warmup -no-cnv -nr > /dev/null 2>&1
# The four largest: the products' cases are two or more of them even when a busy machine inflates a CPU case
# (make test once saw one of the two largest be a CPU one).
"$GGPROF" replay "$OUT/blas.db" --test-backend-ops "$TBO" -n 4 > "$OUT/blas.replay" 2>&1
expect_ge "blas: of the four largest cases, the products ran alone on BLAS" "$(q "$OUT/blas.db" "SELECT count(*)
    FROM replay WHERE backend = 'BLAS' AND op = 'MUL_MAT' AND isolated_ns > 0")" 2
