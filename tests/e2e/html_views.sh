# The HTML page and the console views say the same thing (issue 25, "one rule in one place"): on llama-completion
# runs of the dense and the MoE model, the heat map's cells (from the page's embedded data) are `rollup --by layer
# --ops`'s op rows, layer by layer, and the stats' bandwidth per op and backend is `top-ops`' GB/s (the roofline
# model's bytes read and written). The numbers come from two code paths (the page's own aggregation of each
# record's layer and bytes in export_html.c; the rollup's SQL views and top-ops' grouping), so they can differ:
# a tampered copy of the page's data must be caught.
. "$(dirname "$0")/../lib.sh"

# compare HTML ROLLUP_CSV TOPOPS_CSV [tamper]: KEY=VALUE lines
# shellcheck disable=SC2016
COMPARE='
const fs = require("fs");
const [html, rollupCsv, topCsv, tamper] = process.argv.slice(1);
const s = fs.readFileSync(html, "utf8");
const m = s.match(/<script id="ggprof-data" type="application\/json">([\s\S]*?)<\/script>/);
const d = JSON.parse(m[1]);
const out = (k, v) => console.log(k + "=" + v);
const csv = (f) => {
  const lines = fs.readFileSync(f, "utf8").trim().split("\n");
  const head = lines.shift().split(",");
  return lines.map((l) => { const c = l.split(","), o = {}; head.forEach((h, i) => { o[h] = c[i]; }); return o; });
};
const name = (k) => d.names[k][0];
if (tamper) { // what a wrong layer rule or a wrong byte count would do: each must be seen
  const fa = d.heat.k.findIndex((k) => name(k) === "FLASH_ATTN_EXT");
  if (fa >= 0) d.heat.layer[fa] = -1;
  const mm = d.stats.k.findIndex((k) => name(k) === "MUL_MAT");
  if (mm >= 0) d.stats.rw[mm] = Math.round(d.stats.rw[mm] * 1.05);
}
const fail = [];

// ---- heat map vs rollup --by layer --ops (kind op); layer -1 / "" is no layer
const heat = new Map(), roll = new Map();
for (let i = 0; i < d.heat.ns.length; i++) {
  if (d.names[d.heat.k[i]][1] !== 0) fail.push("heat cell of a non-OP record " + name(d.heat.k[i]));
  const key = (d.heat.layer[i] < 0 ? "-" : d.heat.layer[i]) + "|" + name(d.heat.k[i]);
  heat.set(key, { n: d.heat.n[i], ms: d.heat.ns[i] / 1e6 });
}
for (const r of csv(rollupCsv)) {
  if (r.kind !== "op") continue;
  roll.set((r.layer === "" ? "-" : r.layer) + "|" + r.name, { n: Number(r.count), ms: Number(r.time_ms) });
}
let cellDiff = 0;
for (const [k, v] of roll) {
  const h = heat.get(k);
  if (!h) { cellDiff++; fail.push("rollup has " + k + ", the heat map not"); continue; }
  if (h.n !== v.n || Math.abs(h.ms - v.ms) > 0.0005 + 1e-9) {
    cellDiff++;
    fail.push(k + ": heat map " + h.n + " records " + h.ms.toFixed(6) + " ms, rollup " + v.n + " " + v.ms);
  }
}
for (const k of heat.keys()) if (!roll.has(k)) { cellDiff++; fail.push("the heat map has " + k + ", rollup not"); }
out("heat_cells", heat.size);
out("rollup_cells", roll.size);
out("heat_differ", cellDiff);
const layersOf = (map, op) => Array.from(map.keys()).filter((k) => k.endsWith("|" + op)).map((k) => k.split("|")[0])
  .sort((a, b) => (a === "-") - (b === "-") || a - b).join(",");
for (const op of ["FLASH_ATTN_EXT", "SET_ROWS"]) {
  out("heat_layers_" + op, layersOf(heat, op));
  out("rollup_layers_" + op, layersOf(roll, op));
  const ms = (l) => (heat.has(l + "|" + op) ? heat.get(l + "|" + op).ms.toFixed(3) : "0");
  out("heat_ms_" + op, ["0", "1", "2", "3", "-"].map((l) => l + ":" + ms(l)).join(" "));
}

// ---- stats bandwidth vs top-ops: per op (a fused pair RMS_NORM+MUL is its first op, the record name) and backend
const backend = (lane) => d.lanes[lane].name.replace(/ \(sched [0-9]+\)| \(device\)| \u00b7 pid [0-9]+/g, "");
const page = new Map(), top = new Map();
for (let i = 0; i < d.stats.k.length; i++) {
  if (d.names[d.stats.k[i]][1] !== 0) continue;
  const key = name(d.stats.k[i]) + "|" + backend(d.stats.lane[i]);
  const a = page.get(key) || { n: 0, ns: 0, rw: 0 };
  a.n += d.stats.count[i];
  a.ns += d.stats.total[i];
  a.rw = a.rw < 0 || d.stats.rw[i] < 0 ? -1 : a.rw + d.stats.rw[i];
  page.set(key, a);
}
for (const r of csv(topCsv)) {
  const key = r.op.split("+")[0] + "|" + r.backend;
  const a = top.get(key) || { n: 0, ns: 0, bytes: 0, rows: 0, gbps: "" };
  a.n += Number(r.count);
  a.ns += Number(r.total_ns);
  a.bytes = a.bytes < 0 || r.bytes === "" ? -1 : a.bytes + Number(r.bytes);
  a.rows++;
  a.gbps = r.gbps;
  top.set(key, a);
}
let bwDiff = 0, compared = 0;
const gbs = (b, ns) => (b < 0 || !ns ? "" : (b / ns).toFixed(2)); // as viewer.js shows it
for (const [k, t] of top) {
  const p = page.get(k);
  if (!p) { bwDiff++; fail.push("top-ops has " + k + ", the page not"); continue; }
  compared++;
  const pg = gbs(p.rw, p.ns), tg = t.rows === 1 ? t.gbps : gbs(t.bytes, t.ns);
  // the same bytes and time; GB/s printed by C (%.2f) and JS (toFixed(2)) may round a tie apart by 0.01
  const same = p.n === t.n && p.ns === t.ns && p.rw === t.bytes &&
    (pg === tg || (pg !== "" && tg !== "" && Math.abs(Number(pg) - Number(tg)) <= 0.0100001));
  if (!same) {
    bwDiff++;
    fail.push(k + ": page " + p.n + " records " + p.ns + " ns " + p.rw + " B " + pg + " GB/s; top-ops " + t.n + " " + t.ns +
      " " + t.bytes + " " + tg);
  }
  out("gbps_" + k.replace("|", "_"), pg + "/" + tg);
}
for (const k of page.keys()) if (!top.has(k)) { bwDiff++; fail.push("the page has " + k + ", top-ops not"); }
out("bw_compared", compared);
out("bw_differ", bwDiff);
out("first_failures", fail.slice(0, 3).join("; "));
'

declare -A KV
load_kv() { # FILE: its KEY=VALUE lines into KV
    KV=()
    while IFS='=' read -r k v; do [ -n "$k" ] && KV[$k]=$v; done < "$1"
}

for model in dense moe; do
    db="$OUT/$model.db"
    record_completion "$model" "$db"
    expect "$model: record exits 0" "$?" 0
    "$GGPROF" export "$db" --html "$OUT/$model.html" 2> "$OUT/$model.export.err"
    expect "$model: export --html exits 0" "$?" 0
    "$GGPROF" rollup "$db" --by layer --ops --format csv > "$OUT/$model.rollup.csv"
    expect "$model: rollup --by layer --ops exits 0" "$?" 0
    "$GGPROF" top-ops "$db" -n 0 --format csv > "$OUT/$model.top-ops.csv"
    expect "$model: top-ops exits 0" "$?" 0

    node -e "$COMPARE" "$OUT/$model.html" "$OUT/$model.rollup.csv" "$OUT/$model.top-ops.csv" > "$OUT/$model.cmp" \
        2> "$OUT/$model.cmp.err"
    expect "$model: the comparison runs" "$?" 0
    load_kv "$OUT/$model.cmp"
    expect_ge "$model: the heat map has cells" "${KV[heat_cells]:-0}" 10
    expect "$model: heat map = rollup --by layer --ops, cell by cell (layer, op, records, ms)" \
        "${KV[heat_differ]:-missing} ${KV[heat_cells]:-}" "0 ${KV[rollup_cells]:-}"
    for op in FLASH_ATTN_EXT SET_ROWS; do
        expect "$model: $op over the same layers in both views" "${KV[heat_layers_$op]:-missing}" "${KV[rollup_layers_$op]:-}"
        expect "$model: $op has no 'no layer' cell (its tensor is an unnamed node_N: the op before it gives the layer)" \
            "$(echo "${KV[heat_layers_$op]:-}" | tr ',' '\n' | grep -c -- '^-$')" 0
    done
    [ "$model" = dense ] && expect "dense: FLASH_ATTN_EXT in layers 0-3" "${KV[heat_layers_FLASH_ATTN_EXT]:-}" "0,1,2,3"
    expect_ge "$model: op bandwidths compared with top-ops" "${KV[bw_compared]:-0}" 5
    expect "$model: the page's GB/s per op and backend = top-ops' (same records, time, bytes read+written)" \
        "${KV[bw_differ]:-missing}" 0
    [ -n "${KV[first_failures]:-}" ] && echo "# $model: ${KV[first_failures]}"
    {
        echo "# $model: FLASH_ATTN_EXT ms per layer (page): ${KV[heat_ms_FLASH_ATTN_EXT]:-}"
        echo "# $model: SET_ROWS ms per layer (page): ${KV[heat_ms_SET_ROWS]:-}"
        for k in "${!KV[@]}"; do case $k in gbps_*) echo "# $model: GB/s page/top-ops ${k#gbps_}: ${KV[$k]}" ;; esac; done | sort
    } >> "$OUT/numbers.txt"

    # the comparison can fail: a FLASH_ATTN_EXT cell moved to no layer, MUL_MAT's bytes off by 5%
    node -e "$COMPARE" "$OUT/$model.html" "$OUT/$model.rollup.csv" "$OUT/$model.top-ops.csv" tamper > "$OUT/$model.tampered"
    load_kv "$OUT/$model.tampered"
    expect "$model: a tampered page is caught (heat map and bandwidth)" \
        "$([ "${KV[heat_differ]:-0}" -ge 1 ] && [ "${KV[bw_differ]:-0}" -ge 1 ] && echo caught)" caught
done
