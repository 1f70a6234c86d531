# The upstream profiler's formats: its v3 JSON read in every layout (one record per line, minified,
# pretty-printed and gzip), golden report/export outputs, the upstream profiler's keys in order, and precise errors.
. "$(dirname "$0")/../lib.sh"

S="$GGPROF_ROOT/samples/traces"
G="$GGPROF_ROOT/tests/golden"
for f in upstream-v3.json upstream-v3-min.json upstream-v3-pretty.json.gz; do
    "$GGPROF" report "$S/$f" > "$OUT/$f.report"
    expect "report $f matches the golden report" "$(diff -u "$G/upstream-v3.report" "$OUT/$f.report" > "$OUT/$f.diff" && echo same)" same
done
"$GGPROF" export "$S/upstream-v3.json" --json "$OUT/export.json" --text "$OUT/export.txt"
expect "export --json matches the golden" "$(diff -u "$G/upstream-v3.export.json" "$OUT/export.json" > /dev/null && echo same)" same
expect "export --text matches the golden" "$(diff -u "$G/upstream-v3.txt" "$OUT/export.txt" > /dev/null && echo same)" same

# Our JSON has the upstream profiler's keys in the upstream profiler's order, then ours.
expect "every record starts with the upstream profiler's 17 keys in order" "$(node -e '
    const upstream = ["type","name","backend_id","split_id","start_ns","duration_ns","bytes","extra","tensor_name",
                  "ne","out_type","n_src","ne_src","nb_src","type_src","op_params","sub_op"];
    const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const bad = d.records.filter(r => Object.keys(r).slice(0, 17).join() !== upstream.join());
    console.log(d.records.length > 0 && bad.length === 0 ? "yes" : "no: " + bad.length)' "$OUT/export.json")" yes

# Reading back what we wrote gives the same records.
"$GGPROF" export "$OUT/export.json" --json "$OUT/again.json.gz"
expect "export, import, export: the same records" \
    "$(gzip -dc "$OUT/again.json.gz" | diff -q - "$OUT/export.json" > /dev/null && echo same)" same

# Bad JSON: one line, naming the file and where, exit 2.
bad_json() { # NAME FILE NEEDLE
    "$GGPROF" report "$2" > /dev/null 2> "$OUT/err"
    local rc=$?
    expect "$1: exit 2" "$rc" 2
    expect "$1: one line" "$(wc -l < "$OUT/err")" 1
    expect "$1: names the file and says '$3'" "$(grep -c -F "$(basename "$2")" "$OUT/err"):$(grep -c -F -- "$3" "$OUT/err")" "1:1"
}
head -c 20000 "$S/upstream-v3.json" > "$OUT/truncated.json"
bad_json "truncated JSON" "$OUT/truncated.json" "truncated"
head -c 3000 "$S/upstream-v3-pretty.json.gz" > "$OUT/truncated.json.gz"
bad_json "truncated gzip" "$OUT/truncated.json.gz" "truncated"
sed 's/"version": 3/"version": 2/' "$S/upstream-v3.json" > "$OUT/v2.json"
bad_json "version 2" "$OUT/v2.json" "version 2; ggprof reads version 3"
awk 'NR == 15 { sub(/"bytes": [0-9]+, /, "") } { print }' "$S/upstream-v3.json" > "$OUT/missing.json"
bad_json "a record missing a field" "$OUT/missing.json" "record 4 has no 'bytes'"
printf '{"version": 3, "records": [{"type": 0,, }]}' > "$OUT/garbage.json"
bad_json "a record that is not JSON" "$OUT/garbage.json" "record 0 is not a JSON object"
printf 'not json at all\n' > "$OUT/text.json"
bad_json "not JSON at all" "$OUT/text.json" "not a ggprof trace"
