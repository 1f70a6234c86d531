# report's per-op GB/s is the HTML page's (docs/upstream-compatibility.md): "traffic", the bytes each op reads and
# writes under the roofline model over its time, the same function both call (analyzer/roofline_groups.c). Per op,
# on checked-in samples: a JSON profile read straight into report's statistics, the same read into a database, and
# two more samples; report --format json's traffic_bytes and total_ns are the page's bytes read + written and time.
# The upstream profiler's own outputs keep their bytes (tests/e2e/upstream_compat.sh's goldens).
. "$(dirname "$0")/../lib.sh"
S="$GGPROF_ROOT/samples/traces"
cd "$OUT" || exit 1

rm -f upstream.db
"$GGPROF" query "$S/upstream-v3.json" "VACUUM INTO '$OUT/upstream.db'" > /dev/null
for t in "$S/upstream-v3.json" upstream.db "$S/rollup-dense.json.gz" "$S/llama-moe-f16.json.gz"; do
    n=$(basename "$t")
    "$GGPROF" export "$t" --html "$n.html" > /dev/null 2>&1
    expect "$n: export --html" "$?" 0
    "$GGPROF" report "$t" > "$n.report"
    "$GGPROF" report "$t" --format json > "$n.report.json"
    # "compared N, differ M: ...": each op (on one backend) of report's table against the page's stats
    r=$(python3 - "$n.html" "$n.report" "$n.report.json" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="ggprof-data" type="application/json">(.*?)</script>', page, re.S).group(1))
S, names = d["stats"], d["names"]
pg = {}  # op name -> [rw, ns], as viewer.js sums an op's rows (rw < 0: unknown)
for i in range(len(S["k"])):
    name, typ = names[S["k"][i]]
    if typ != 0: continue
    a = pg.setdefault(name, [0.0, 0])
    a[0] = -1 if a[0] < 0 or S["rw"][i] < 0 else a[0] + S["rw"][i]
    a[1] += S["total"][i]
text, rows = {}, {}
for l in open(sys.argv[2], encoding="utf-8"):
    m = re.match(r"  \[OP  \] backend -?\d+ (\S+) .*?max=\s*[\d.]+ us\s+(?:traffic ([\d.]+) ([GT])B/s)?", l)
    if m: text.setdefault(m.group(1), []).append(None if m.group(2) is None else
                                                 float(m.group(2)) * (1000 if m.group(3) == "T" else 1))
for o in json.load(open(sys.argv[3]))["ops"]:
    if o["type"] == "op": rows.setdefault(o["name"], []).append(o)
n, bad = 0, []
for name, (rw, ns) in sorted(pg.items()):
    if len(text.get(name, [])) != 1 or len(rows.get(name, [])) != 1: continue  # on two backends: per backend here
    n += 1
    t, o = text[name][0], rows[name][0]
    want = round(rw / ns, 2) if rw >= 0 and ns else None
    if (t is None) != (want is None) or (t is not None and abs(t - want) > 0.0100001):
        bad.append("%s: report %s, page %s GB/s" % (name, t, want))
    tb = o["traffic_bytes"]
    if o["total_ns"] != ns or (tb is None) != (rw < 0) or (tb is not None and abs(tb - rw) > 1e-9 * max(rw, 1)):
        bad.append("%s: json %s B in %s ns, page %s B in %s ns" % (name, tb, o["total_ns"], rw, ns))
print(" ".join(["compared", str(n), "differ", str(len(bad))] + bad[:3]))
PY
)
    expect_ge "$n: ops compared" "$(echo "$r" | awk '{ print $2 }')" 8
    expect "$n: report's GB/s per op = the page's (text, and JSON's bytes and time)" "$(echo "$r" | cut -d' ' -f3-)" \
        "differ 0"
done
# The column says what it is; MUL_MAT's traffic is its weights' bytes, far above its output's.
expect "the column is named traffic" "$(grep -c ' MUL_MAT .* traffic [0-9.]* GB/s' upstream-v3.json.report)" 1
expect "MUL_MAT: traffic above the output's bytes over the time" "$(python3 -c '
import json, sys
o = [o for o in json.load(open(sys.argv[1]))["ops"] if o["name"] == "MUL_MAT"][0]
print(o["traffic_bytes"] > 10 * o["bytes"])' upstream.db.report.json)" True
# The upstream format where it is asked for: export --text keeps the output's bytes over the time.
"$GGPROF" export "$S/upstream-v3.json" --text upstream.txt > /dev/null
expect "export --text: the upstream profiler's bandwidth, bytes / time" "$(python3 -c '
import json, re, sys
o = [o for o in json.load(open(sys.argv[1]))["ops"] if o["name"] == "MUL_MAT"][0]
line = [l for l in open(sys.argv[2]) if re.match(r"OP\s+\d+\s+MUL_MAT\s", l)][0]
print("%.2f GB/s" % (o["bytes"] / o["total_ns"]) in line and "traffic" not in open(sys.argv[2]).read())' \
    upstream.db.report.json upstream.txt)" True
