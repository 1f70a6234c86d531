# top-ops, top-kernels, inefficiency, export --roofline and calibrate: golden outputs on the checked-in sample
# traces (samples/traces/llama-*.json.gz), the invariants those outputs must keep, bad input, and a live trace
# read both as its database and as its JSON. GGPROF_UPDATE_GOLDEN=1 rewrites the goldens (then review the diff).
. "$(dirname "$0")/../lib.sh"
ROOT=${GGPROF_ROOT:?run through tests/run.sh}
S=$ROOT/samples/traces
GOLD=$ROOT/tests/golden/analysis
SAMPLES="llama-dense-f16 llama-moe-f16 llama-dense-q4_0"
ROOFS="--roof CPU=20,100,80 --roof BLAS=20,120"

# golden NAME CMD...: CMD's stdout must equal $GOLD/NAME. The samples are fixed files, so nothing in the
# output varies from run to run (durations included) and nothing is stripped.
golden() {
    local name=$1
    shift
    "$@" > "$OUT/$name" 2> "$OUT/$name.stderr"
    local rc=$?
    if [ "${GGPROF_UPDATE_GOLDEN:-0}" = 1 ] && [ "$rc" -eq 0 ]; then mkdir -p "$GOLD" && cp "$OUT/$name" "$GOLD/$name"; fi
    if [ "$rc" -ne 0 ]; then
        not_ok "golden $name" "exited $rc: $(head -n 1 "$OUT/$name.stderr")"
    elif diff -u "$GOLD/$name" "$OUT/$name" > "$OUT/$name.diff" 2>&1; then
        ok "golden $name"
    else
        not_ok "golden $name" "differs from tests/golden/analysis/$name (diff in $OUT/$name.diff)"
        head -n 30 "$OUT/$name.diff" | sed 's/^/#   /'
    fi
}

# json_rows FILE: the number of objects in a JSON array, or an error if FILE is not valid JSON.
json_rows() { node -e 'const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    if (!Array.isArray(a)) throw new Error("not an array"); console.log(a.length)' "$1" 2>&1 | tail -n 1; }

# csv_col FILE KEY: the values of a CSV column, one a line (quoted fields handled).
csv_col() { node -e 'const [f, key] = process.argv.slice(1);
    const rows = require("fs").readFileSync(f, "utf8").trim().split("\n").map(l => {
        const out = []; let cur = "", q = false;
        for (let i = 0; i < l.length; i++) { const c = l[i];
            if (q) { if (c === "\"" && l[i + 1] === "\"") { cur += c; i++; } else if (c === "\"") q = false; else cur += c; }
            else if (c === "\"") q = true; else if (c === ",") { out.push(cur); cur = ""; } else cur += c; }
        out.push(cur); return out; });
    const k = rows[0].indexOf(key); if (k < 0) throw new Error("no column " + key);
    for (const r of rows.slice(1)) { if (r.length !== rows[0].length) throw new Error("ragged row"); console.log(r[k]); }' "$1" "$2"; }

for s in $SAMPLES; do
    t=$S/$s.json.gz
    golden "top-ops.$s.txt" "$GGPROF" top-ops "$t" $ROOFS
    golden "top-kernels.$s.txt" "$GGPROF" top-kernels "$t" -n 12 $ROOFS
    golden "inefficiency.$s.txt" "$GGPROF" inefficiency "$t" -n 15 $ROOFS

    # Every table line fits an 80-column terminal.
    expect "$s: tables fit 80 columns" "$(cat "$OUT/top-ops.$s.txt" "$OUT/top-kernels.$s.txt" \
        "$OUT/inefficiency.$s.txt" | awk 'length > 80' | wc -l)" 0

    # All ops: the counts and times add up to the trace's OP records.
    "$GGPROF" top-ops "$t" -n 0 --format csv > "$OUT/$s.ops.csv"
    expect "$s: top-ops counts add up to the OP records" "$(csv_col "$OUT/$s.ops.csv" count | paste -sd+ | bc)" \
        "$(q "$t" "SELECT count(*) FROM records WHERE type = 0")"
    expect "$s: top-ops times add up to the OP time" "$(csv_col "$OUT/$s.ops.csv" total_ns | paste -sd+ | bc)" \
        "$(q "$t" "SELECT sum(duration_ns) FROM records WHERE type = 0")"
    expect "$s: without roofs, no roof%" "$(csv_col "$OUT/$s.ops.csv" roof_pct | grep -c .)" 0
    expect "$s: ops sorted by total time" "$(csv_col "$OUT/$s.ops.csv" total_ns | sort -c -n -r 2>&1 | wc -l)" 0
    expect "$s: MUL_MAT has bytes and FLOPs" "$(awk -F, '$1 == "MUL_MAT" && $7 > 0 && $8 > 0' "$OUT/$s.ops.csv" | wc -l)" \
        "$(q "$t" "SELECT count(DISTINCT backend_id) FROM records WHERE type = 0 AND name = 'MUL_MAT'")"
    "$GGPROF" top-ops "$t" -n 0 --format csv --roof cpu=20,100 > "$OUT/$s.ops-roof.csv"
    expect "$s: with a CPU roof, every CPU op has a roof%" "$(paste -d, <(csv_col "$OUT/$s.ops-roof.csv" backend) \
        <(csv_col "$OUT/$s.ops-roof.csv" roof_pct) | grep -c '^CPU,$')" 0

    # The longest execution is the trace's longest OP record.
    "$GGPROF" top-kernels "$t" -n 1 --format csv > "$OUT/$s.k1.csv"
    expect "$s: top-kernels starts with the longest OP" "$(csv_col "$OUT/$s.k1.csv" duration_ns)" \
        "$(q "$t" "SELECT max(duration_ns) FROM records WHERE type = 0")"

    # Inefficiency: ranked by ns per output byte, highest first.
    "$GGPROF" inefficiency "$t" -n 0 --format csv > "$OUT/$s.ineff.csv"
    expect "$s: inefficiency ranked by ns/B" "$(csv_col "$OUT/$s.ineff.csv" ns_per_byte | grep . | sort -c -g -r 2>&1 | wc -l)" 0
    expect "$s: inefficiency groups cover every OP record" "$(csv_col "$OUT/$s.ineff.csv" count | paste -sd+ | bc)" \
        "$(q "$t" "SELECT count(*) FROM records WHERE type = 0")"

    # JSON: valid, one object per row asked for.
    for c in top-ops top-kernels inefficiency; do
        "$GGPROF" $c "$t" -n 4 --format json > "$OUT/$s.$c.json"
        expect "$s: $c --format json parses, 4 rows" "$(json_rows "$OUT/$s.$c.json")" 4
    done
done

# One sample in every format (CSV and JSON carry the columns a terminal cannot).
m=$S/llama-moe-f16.json.gz
golden "top-ops.llama-moe-f16.csv" "$GGPROF" top-ops "$m" --format csv $ROOFS
golden "top-ops.llama-moe-f16.json" "$GGPROF" top-ops "$m" --format json -n 5 $ROOFS
golden "top-kernels.llama-moe-f16.csv" "$GGPROF" top-kernels "$m" --format csv -n 8 $ROOFS
golden "top-kernels.llama-moe-f16.json" "$GGPROF" top-kernels "$m" --format json -n 5
golden "inefficiency.llama-moe-f16.csv" "$GGPROF" inefficiency "$m" --format csv -n 10 $ROOFS
golden "inefficiency.llama-moe-f16.json" "$GGPROF" inefficiency "$m" --format json -n 5 $ROOFS

# The roofline plot: golden SVG, well-formed, a point per op that has FLOPs, a roof line per roof.
"$GGPROF" export "$m" --roofline "$OUT/moe.svg" $ROOFS
golden "roofline.llama-moe-f16.svg" cat "$OUT/moe.svg"
if command -v xmllint > /dev/null; then
    expect "roofline SVG is well-formed XML" "$(xmllint --noout "$OUT/moe.svg" 2>&1 | wc -l)" 0
fi
"$GGPROF" top-ops "$m" -n 0 --format csv > "$OUT/moe.ops.csv"
expect "roofline SVG: one point per op with FLOPs" "$(grep -c '<circle' "$OUT/moe.svg")" \
    "$(csv_col "$OUT/moe.ops.csv" flops | awk '$1 > 0' | wc -l)"
expect "roofline SVG: CPU's F32 and F16 roofs drawn" "$(grep -c '<polyline' "$OUT/moe.svg")" 2
"$GGPROF" export "$S/llama-dense-q4_0.json.gz" --roofline "$OUT/q4.svg"
expect "roofline SVG without roofs: no roof line" "$(grep -c '<polyline' "$OUT/q4.svg")" 0

# --help and help print the same text; the commands are in the command list.
for c in top-ops top-kernels inefficiency calibrate; do
    expect "$c: --help equals help $c" "$("$GGPROF" $c --help | md5sum)" "$("$GGPROF" help $c | md5sum)"
    expect "$c: listed by ggprof --help" "$("$GGPROF" --help | grep -c "^  $c ")" 1
done

# Bad input: exit 2, one line on stderr naming the value.
expect_error() { # NAME WHAT-THE-LINE-MUST-NAME CMD...
    local name=$1 needle=$2
    shift 2
    "$@" > "$OUT/err.stdout" 2> "$OUT/err.stderr"
    local rc=$?
    expect "$name: exit status 2" "$rc" 2
    expect "$name: one line naming '$needle'" "$(wc -l < "$OUT/err.stderr"):$(grep -c -F -- "$needle" "$OUT/err.stderr")" "1:1"
}
expect_error "bad --format" "yaml" "$GGPROF" top-ops "$m" --format yaml
expect_error "bad -n" "-3" "$GGPROF" top-kernels "$m" -n -3
expect_error "bad --roof" "CPU=fast" "$GGPROF" inefficiency "$m" --roof CPU=fast
expect_error "roof with no GFLOPS" "CPU=20" "$GGPROF" top-ops "$m" --roof CPU=20
expect_error "missing --roof-file" "nosuch.roofs" "$GGPROF" top-ops "$m" --roof-file "$OUT/nosuch.roofs"
printf 'CPU=20,100\nGPU=lots\n' > "$OUT/bad.roofs"
expect_error "bad line in a roof file" "bad.roofs:2" "$GGPROF" export "$m" --roofline "$OUT/x.svg" --roof-file "$OUT/bad.roofs"
expect_error "unknown option" "--top" "$GGPROF" top-ops "$m" --top 5
expect_error "missing trace" "nosuch.db" "$GGPROF" inefficiency "$OUT/nosuch.db"
expect_error "calibrate: bad -t" "0" "$GGPROF" calibrate -t 0
expect_error "calibrate: unwritable -o" "/nonexistent-dir/r.txt" "$GGPROF" calibrate -o /nonexistent-dir/r.txt

# calibrate: small sizes (a quick run); its file is what --roof-file reads, and it gives roof%.
if "$GGPROF" calibrate -t 1 -s 8 -m 48 -o "$OUT/roofs.txt" > "$OUT/calibrate.out" 2>&1; then
    ok "calibrate runs"
else
    not_ok "calibrate runs" "$(tail -n 1 "$OUT/calibrate.out")"
fi
expect "calibrate writes a CPU roof" "$(grep -cE '^CPU=[0-9]+\.[0-9]+,[0-9]+\.[0-9]+,[0-9]+\.[0-9]+$' "$OUT/roofs.txt")" 1
expect "calibrate prints the roofs it writes" "$(grep -v '^#' "$OUT/roofs.txt")" "$(sed -n '/^roofs/,$p' "$OUT/calibrate.out" | tail -n +2)"
"$GGPROF" top-ops "$m" -n 0 --format csv --roof-file "$OUT/roofs.txt" > "$OUT/moe.cal.csv"
expect "a calibrated roof gives every CPU op a roof%" "$(paste -d, <(csv_col "$OUT/moe.cal.csv" backend) \
    <(csv_col "$OUT/moe.cal.csv" roof_pct) | grep -c '^CPU,$')" 0

# A live trace: its database (types named by the ggml that ran, fusion from the graph) and its JSON (ggml 0.23's
# built-in types, fusion from "extra") give the same figures.
if [ -n "${LLAMA_BIN_DIR:-}" ] && [ -n "${GGUF_MOE:-}" ]; then
    "$GGPROF" record -q -o "$OUT/live.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_MOE" -p "Hello there" -n 3 \
        -t 2 --no-warmup -no-cnv > "$OUT/live.log" 2>&1
    expect_ge "live: OP records" "$(q "$OUT/live.db" "SELECT count(*) FROM records WHERE type = 0")" 1
    expect_ge "live: the database names its types" "$(q "$OUT/live.db" "SELECT count(*) FROM ggml_types")" 3
    for c in top-ops top-kernels inefficiency; do
        "$GGPROF" $c "$OUT/live.db" -n 0 --format csv $ROOFS > "$OUT/live.$c.db.csv"
        "$GGPROF" $c "$OUT/live.json.gz" -n 0 --format csv $ROOFS > "$OUT/live.$c.json.csv"
        expect_ge "live: $c lists rows" "$(wc -l < "$OUT/live.$c.db.csv")" 2
        expect "live: $c reads the .db and the .json.gz alike" "$(diff "$OUT/live.$c.db.csv" "$OUT/live.$c.json.csv" | wc -l)" 0
    done
    expect "live: MUL_MAT_ID costed" "$(awk -F, '$1 == "MUL_MAT_ID" && $7 > 0 && $8 > 0' "$OUT/live.top-ops.db.csv" | wc -l)" 1
fi
