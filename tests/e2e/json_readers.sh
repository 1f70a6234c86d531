# The version-3 JSON has two readers: a fast one for records of the layout writers produce, and cJSON for any
# other (analyzer/json_v3_read.c). With GGPROF_JSON_CHECK=1 every record is read by both and compared: here on every
# sample trace, on layouts the fast reader must hand over (escapes, fractions, nested values, repeated keys) or
# take (keys reordered, spaces removed), and on a 100,000-record file.
# The .json.gz export (gzip members written by worker threads) is read back by gzip, Python, Node and ggprof.
. "$(dirname "$0")/../lib.sh"
S="$GGPROF_ROOT/samples/traces"

# check FILE LABEL: "N:F" (records, read by the fast reader) when both readers agree on every record.
check() {
    GGPROF_JSON_CHECK=1 "$GGPROF" report "$1" > "$OUT/$2.report" 2> "$OUT/$2.err"
    local rc=$?
    local line
    line=$(grep 'json check:' "$OUT/$2.err")
    [ "$rc" = 0 ] && [ -n "$line" ] || { echo "failed: $(tail -n 1 "$OUT/$2.err")"; return; }
    echo "$line" | sed 's/.*check: \([0-9]*\) records, \([0-9]*\) read.*/\1:\2/'
}

for f in "$S"/*.json "$S"/*.json.gz; do
    n=$(basename "$f")
    got=$(check "$f" "$n")
    expect "$n: both readers agree on every record, the fast one reads them all" \
        "$(echo "$got" | awk -F: '$1 > 0 && $1 == $2 { print "all" }')" all
    # And what the commands print does not depend on the reader.
    "$GGPROF" report "$f" > "$OUT/$n.plain" 2>&1
    expect "$n: report prints the same with the check on" "$(diff -q "$OUT/$n.plain" "$OUT/$n.report" > /dev/null && echo same)" same
done

# Layouts made from the upstream profiler's sample: each record rewritten by node.
variant() { # NAME JS-EXPRESSION-OF-r (a parsed record) -> the record's text
    node -e '
        const fs = require("fs");
        const lines = fs.readFileSync(process.argv[1], "utf8").split("\n");
        const f = new Function("r", "i", "return " + process.argv[2]);
        let i = 0;
        const out = lines.map(l => {
            if (!l.startsWith("    {\"type\"")) return l;
            const comma = l.endsWith(",");
            return "    " + f(JSON.parse(comma ? l.slice(0, -1) : l), i++) + (comma ? "," : "");
        });
        fs.writeFileSync(process.argv[3], out.join("\n"));' "$S/upstream-v3.json" "$2" "$OUT/$1.json"
}
variant reordered 'JSON.stringify(Object.fromEntries(Object.entries(r).reverse()))'
variant minified 'JSON.stringify(r)'
variant escaped 'JSON.stringify(Object.assign(r, i % 3 ? {} : { tensor_name: "q\"uote\\\\back\nline\u00e9" }))'
variant fraction 'JSON.stringify(r).replace(/"duration_ns":(\d+)/, i % 2 ? "\"duration_ns\":$1" : "\"duration_ns\":$1.0")'
variant nested 'JSON.stringify(Object.assign(r, i % 4 ? {} : { meta: { a: [1, { b: 2 }] } }))'
variant repeated 'JSON.stringify(r).replace(/}$/, i % 5 ? "}" : ", \"bytes\": 7}")'
variant bigint 'JSON.stringify(r).replace(/"sub_op":-?\d+/, i % 2 ? "\"sub_op\":-1" : "\"sub_op\":9007199254740993")'
variant named_like_keys 'JSON.stringify(Object.assign(r, { tensor_name: "bytes", extra: "start_ns" }))'

for v in reordered minified named_like_keys; do
    expect "$v: the fast reader takes every record, as the general one reads them" \
        "$(check "$OUT/$v.json" "$v")" "173:173"
done
for v in escaped fraction nested repeated bigint; do
    got=$(check "$OUT/$v.json" "$v")
    expect "$v: the records the fast reader cannot take go to the general one, the rest agree" \
        "$(echo "$got" | awk -F: '$1 == 173 && $2 > 0 && $2 < 173 { print "split" }')" split
done
expect "a tensor named like a key ('bytes') keeps the record's own bytes" "$(q "$OUT/named_like_keys.json" \
    "SELECT sum(bytes) FROM records")" "$(q "$S/upstream-v3.json" "SELECT sum(bytes) FROM records")"

# 100,000 records of the sample's, shifted in time, in the writer's layout.
node -e '
    const fs = require("fs");
    const lines = fs.readFileSync(process.argv[1], "utf8").split("\n");
    const recs = lines.filter(l => l.startsWith("    {\"type\"")).map(l => l.replace(/,$/, ""));
    const head = lines.slice(0, lines.indexOf("  \"records\": [") + 1).join("\n");
    const n = 100000, out = [head];
    for (let i = 0; i < n; i++) out.push(recs[i % recs.length].replace(/"start_ns": (\d+)/,
        (m, v) => "\"start_ns\": " + (Number(v) + Math.floor(i / recs.length) * 1e9)) + (i + 1 < n ? "," : ""));
    out.push("  ]", "}");
    fs.writeFileSync(process.argv[2], out.join("\n") + "\n");' "$S/upstream-v3.json" "$OUT/100k.json"
expect "100,000 records: both readers agree on every one, the fast one reads them all" \
    "$(check "$OUT/100k.json" 100k)" "100000:100000"

# The JSON export compressed by worker threads, 4 MiB a gzip member: one stream of members to every reader.
"$GGPROF" export "$OUT/100k.json" --json "$OUT/100k.json.gz" > /dev/null 2>&1
"$GGPROF" export "$OUT/100k.json" --json "$OUT/100k-plain.json" > /dev/null 2>&1
expect ".json.gz export: several gzip members" "$(python3 -c '
import sys, zlib
data, n = open(sys.argv[1], "rb").read(), 0
while data:
    d = zlib.decompressobj(31); d.decompress(data); data = d.unused_data; n += 1
print("several" if n > 2 else n)' "$OUT/100k.json.gz")" several
expect ".json.gz export: gzip -t passes" "$(gzip -t "$OUT/100k.json.gz" 2>&1 && echo ok)" ok
expect ".json.gz export: gzip -d gives the plain export, byte for byte" \
    "$(gzip -dc "$OUT/100k.json.gz" | cmp - "$OUT/100k-plain.json" && echo same)" same
expect ".json.gz export: Python's gzip reads it whole" "$(python3 -c '
import gzip, json, sys
print(len(json.load(gzip.open(sys.argv[1]))["records"]))' "$OUT/100k.json.gz")" 100000
expect ".json.gz export: Node's zlib reads it whole" "$(node -e '
    const z = require("zlib"), fs = require("fs");
    console.log(JSON.parse(z.gunzipSync(fs.readFileSync(process.argv[1])).toString()).records.length)' "$OUT/100k.json.gz")" 100000
expect ".json.gz export: ggprof reads it back, every record by the fast reader" "$(check "$OUT/100k.json.gz" 100kgz)" "100000:100000"
