# Tensor names are data from a program we did not write: every output that carries them keeps them as data (escaped
# in HTML, JSON and CSV), never as markup or structure. (The roofline SVG and the text report name ops, not tensors.) The program names a MUL_MAT '</script><img ...>' and a SCALE with a
# quote, an apostrophe, a comma, a backslash, a newline, a tab and '&amp'; two more SCALEs have names that are not
# UTF-8 (two stray bytes; 63 bytes ending in a character ggml cut), which every JSON output writes as U+FFFD.
. "$(dirname "$0")/../lib.sh"

build_ggml_program hostile_names
db="$OUT/hostile.db"
"$GGPROF" record -q -o "$db" -- "$OUT/hostile_names" > "$OUT/stdout" 2>&1
expect "record runs it" "$?" 0
expect "the names reached the trace as they were" "$(q "$db" "SELECT count(DISTINCT tensor_name) FROM records WHERE
    tensor_name IN ('</script><img src=x onerror=alert(1)>', 'q\"uote'',comma;\\back' || char(10) || 'line' || char(9) ||
    'tab&amp')")" 2
"$GGPROF" export "$db" --html "$OUT/h.html" --chrome "$OUT/h.trace.json" --json "$OUT/h.json" --text "$OUT/h.txt"
expect "export writes every format" "$?" 0
# HTML: the only </script> are the page's own closing tags, and no <img element appears.
expect "html: no tag comes from a name" "$(grep -c '<img' "$OUT/h.html")" 0
expect "html: every </script> closes one of the page's scripts" "$(grep -o '</script' "$OUT/h.html" | wc -l)" \
    "$(grep -o '<script' "$OUT/h.html" | wc -l)"
# JSON (Chrome trace and version 3): they parse, and the names come back exactly.
for f in h.trace.json h.json; do
    expect "$f: parses and keeps both names exactly" "$(node -e '
        const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const s = JSON.stringify(d);
        const want = ["</script><img src=x onerror=alert(1)>", "q\"uote'"'"',comma;\\back\nline\ttab&amp"];
        console.log(want.filter(w => s.includes(JSON.stringify(w).slice(1, -1))).length);' "$OUT/$f" 2>&1)" 2
done
# CSV: top-ops and top-kernels rows stay rows (a name with a newline or a comma is one quoted field).
"$GGPROF" top-kernels "$db" --format csv -n 0 > "$OUT/k.csv"
expect "csv: parses into rows of equal width, names intact" "$(node -e '
    const t = require("fs").readFileSync(process.argv[1], "utf8");
    const rows = []; let row = [], f = "", q = false;
    for (let i = 0; i < t.length; i++) {
        const c = t[i];
        if (q) { if (c === "\"" && t[i + 1] === "\"") { f += "\""; i++; } else if (c === "\"") q = false; else f += c; }
        else if (c === "\"") q = true; else if (c === ",") { row.push(f); f = ""; }
        else if (c === "\n") { row.push(f); rows.push(row); row = []; f = ""; } else f += c;
    }
    const w = rows[0].length, flat = rows.flat().join("|");
    console.log(rows.every(r => r.length === w) && flat.includes("q\"uote'"'"',comma;\\back\nline\ttab&amp") ? "ok" : "bad");' \
    "$OUT/k.csv" 2>&1)" ok

# Backend names too, and control characters (an escape sequence, a newline, a tab), in every output: a JSON
# profile whose backends and tensors carry them.
evil='<b>\"x&amp;\u001b[31mRED\nnl\ttab,' # as a JSON string's inside
node -e '
    const fs = require("fs"), evil = JSON.parse("\"" + process.argv[2] + "\"");
    const out = fs.readFileSync(process.argv[1], "utf8").split("\n").map(l => {
        const rec = l.startsWith("    {\"type\""), be = l.startsWith("    {\"id\"");
        if (!rec && !be) return l;
        const c = l.endsWith(","), o = JSON.parse(c ? l.slice(0, -1) : l);
        if (be) o.name = evil + o.name; else if (o.tensor_name) o.tensor_name = evil + o.tensor_name;
        return "    " + JSON.stringify(o) + (c ? "," : "");
    });
    fs.writeFileSync(process.argv[3], out.join("\n"));' "$GGPROF_ROOT/samples/traces/upstream-v3.json" "$evil" "$OUT/evil.json"
e="$OUT/evil.json"
esc=$'\x1b'
{ "$GGPROF" report "$e"; "$GGPROF" top-ops "$e"; "$GGPROF" top-kernels "$e"; "$GGPROF" inefficiency "$e"
  "$GGPROF" rollup "$e" --by layer --ops; "$GGPROF" diff "$e" "$e"; } > "$OUT/evil.txt" 2>&1
expect "text tables and reports: no escape character reaches the terminal" "$(grep -c "$esc" "$OUT/evil.txt")" 0
expect_ge "... the names' control characters are written out" "$(grep -c 'x&amp;\\x1b\[31mRED\\nnl\\ttab,CPU' "$OUT/evil.txt")" 2
expect "... and every table row of top-ops is one line (as many as its JSON has rows)" \
    "$("$GGPROF" top-ops "$e" -n 0 | grep -c 'x&amp;')" "$("$GGPROF" top-ops "$e" -n 0 --format json | grep -c '^  {')"
"$GGPROF" export "$e" --html "$OUT/evil.html" --chrome "$OUT/evil.chrome.json" --roofline "$OUT/evil.svg" \
    --text "$OUT/evil.report.txt" > /dev/null 2>&1
expect "export: HTML, Chrome JSON, SVG, text written" "$?" 0
expect "HTML and SVG: no markup from a name" "$(cat "$OUT/evil.html" "$OUT/evil.svg" | grep -c '<b>')" 0
expect "SVG: well-formed XML with the names in it" "$(xmllint --noout "$OUT/evil.svg" 2>&1 | wc -l):$(grep -c \
    '&lt;b&gt;&quot;x&amp;amp;' "$OUT/evil.svg" | awk '{ print ($1 > 0) }')" "0:1"
expect "Chrome JSON: parses, the backend's name intact" "$(node -e '
    const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    console.log(JSON.stringify(t).includes(JSON.stringify("<b>\"x&amp;\u001b[31mRED\nnl\ttab,CPU").slice(1, -1)) ? "ok" : "bad")' \
    "$OUT/evil.chrome.json" 2>&1)" ok
expect "text report: no escape character" "$(grep -c "$esc" "$OUT/evil.report.txt")" 0
for f in csv json; do
    "$GGPROF" top-ops "$e" --format "$f" > "$OUT/evil-top.$f"
    expect "top-ops --format $f: the name kept as data (escaped, not written out)" \
        "$(grep -c 'x1b\[31mRED\\nnl' "$OUT/evil-top.$f"):$(grep -c 'x&amp;' "$OUT/evil-top.$f" | awk '{ print ($1 > 0) }')" "0:1"
done

# Names that are not UTF-8: "bad\xff\xfe-3", and a 63-byte name that ggml cut inside a euro sign (its last two bytes
# are the sign's first two). Every JSON output is strict UTF-8 JSON (each byte that is not part of a character
# written as U+FFFD, the rest of the name kept): record's .json.gz, export --json, --chrome, --otlp (each line), the
# HTML's data, and --format json of the commands.
expect "the names reached the trace as ggml kept them" "$(q "$db" "SELECT count(DISTINCT tensor_name) FROM records
    WHERE tensor_name IN (CAST(X'626164fffe2d33' AS TEXT),
    'blk.5.a_name_of_64_bytes_that_ggml_cuts_inside_its_euro_sign_' || CAST(X'e282' AS TEXT))")" 2
"$GGPROF" export "$db" --json "$OUT/u.json" --chrome "$OUT/u.chrome.json" --otlp "$OUT/u.otlp.jsonl" \
    --html "$OUT/u.html" > /dev/null 2>&1
expect "export --json, --chrome, --otlp, --html written" "$?" 0
jsons=("${db%.db}.json.gz" u.json u.chrome.json u.otlp.jsonl u.html)
for c in top-ops top-kernels inefficiency; do
    "$GGPROF" "$c" "$db" -n 0 --format json > "$OUT/u.$c.json"
    expect "$c --format json exits 0" "$?" 0
    jsons+=("u.$c.json")
done
for by in layer "layer --ops" block "block --ops" phase graph request; do
    f="u.rollup-${by// /}.json"
    "$GGPROF" rollup "$db" --by $by --format json > "$OUT/$f"
    expect "rollup --by $by --format json exits 0" "$?" 0
    jsons+=("$f")
done
"$GGPROF" diff "$db" "$db" --format json > "$OUT/u.diff.json"
expect "diff --format json exits 0" "$?" 0
jsons+=(u.diff.json)
# strict_json FILE: "ok N", N the number of the two names found (as U+FFFD where a byte was not UTF-8), else why.
strict_json() {
    python3 - "$1" <<'PY' 2>&1 | tail -n 1
import gzip, json, re, sys
f = sys.argv[1]
raw = gzip.open(f).read() if f.endswith(".gz") else open(f, "rb").read()
text = raw.decode("utf-8")  # strict: a byte that is not UTF-8 raises
if f.endswith(".html"):
    m = re.search(r'<script id="ggprof-data" type="application/json">(.*?)</script>', text, re.S)
    docs = [json.loads(m.group(1))]
elif f.endswith(".jsonl"):
    docs = [json.loads(l) for l in text.split("\n") if l.strip()]
else:
    docs = [json.loads(text)]
s = json.dumps(docs, ensure_ascii=False)
s.encode("utf-8")  # strict again: no lone surrogate came from a \u escape
names = ["bad\ufffd\ufffd-3", "blk.5.a_name_of_64_bytes_that_ggml_cuts_inside_its_euro_sign_\ufffd\ufffd"]
found = sum(json.dumps(n, ensure_ascii=False)[1:-1] in s for n in names)
print("ok", found)
PY
}
for f in "${jsons[@]}"; do
    case $f in /*) path=$f ;; *) path=$OUT/$f ;; esac
    r=$(strict_json "$path")
    expect "$(basename "$f"): strict UTF-8 JSON" "${r%% *}" ok
    case $f in *.json.gz | u.json | u.chrome.json | u.html | u.top-kernels.json)
        expect "$(basename "$f"): both names, each byte that is not UTF-8 as U+FFFD" "$r" "ok 2" ;;
    esac
done
