# Tensor names are data from a program we did not write: every output that carries them keeps them as data (escaped
# in HTML, JSON and CSV), never as markup or structure. (The roofline SVG and the text report name ops, not tensors.) The program names a MUL_MAT '</script><img ...>' and a SCALE with a
# quote, an apostrophe, a comma, a backslash, a newline, a tab and '&amp'.
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
