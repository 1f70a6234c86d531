# ggprof export --chrome and --html: on llama-completion runs (CPU; CPU with an RPC backend, which brings
# copies) and on a hand-made profile whose copies have known consumers. The Chrome file must follow the Trace
# Event Format's rules that Perfetto UI and chrome://tracing rely on; the HTML page is driven in Debian's
# chromium (tests/browser/viewer_check.js) and must work with no console error and no network request.
. "$(dirname "$0")/../lib.sh"

# Lanes are per scheduler and backend (the RPC backend also waits in llama.cpp's fitting scheduler): compare names.
lane_names() { sed -E 's/RPC0[^|]*/RPC0/g; s/ \(sched [0-9]+\)//g; s/thread [0-9]+/thread/g; s/ggprof: where the time went/run/g' |
    tr '|' '\n' | sort -u | paste -sd' '; }
BR="$GGPROF_ROOT/tests/browser"

# load_kv FILE: the KEY=VALUE lines of a checker into the array KV
declare -A KV
load_kv() {
    KV=()
    while IFS='=' read -r k v; do [ -n "$k" ] && KV[$k]=$v; done < "$1"
}

check_chrome() { # JSON DB LABEL: the format's rules, and one slice per record
    local json=$1 db=$2 l=$3
    node "$BR/check_chrome_trace.js" "$json" > "$json.check" 2> "$json.check.err"
    load_kv "$json.check"
    expect "$l: chrome: valid JSON with traceEvents" "${KV[valid_json]:-}${KV[has_trace_events]:-}" 11
    for k in x_fields x_negative ns_not_exact not_monotonic bad_nesting unknown_phase m_fields op_args copy_args c_fields c_not_monotonic \
        tracks_without_name tracks_without_process_name flow_malformed flow_unbound flow_op_before_copy_end; do
        expect "$l: chrome: $k" "${KV[$k]:-missing}" 0
    done
    expect_ge "$l: chrome: nanoseconds kept as fractional microseconds" "${KV[x_fractional_ts]:-}" 1
    expect "$l: chrome: one op slice per OP record" "${KV[cat_op]:-}" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0")"
    expect "$l: chrome: one sync slice per SYNC record" "${KV[cat_sync]:-}" "$(q "$db" "SELECT count(*) FROM records WHERE type = 2")"
    expect "$l: chrome: one copy slice per COPY record" "${KV[cat_copy]:-}" "$(q "$db" "SELECT count(*) FROM records WHERE type = 1")"
    expect "$l: chrome: one split slice per split" "${KV[cat_split]:-}" "$(q "$db" "SELECT count(*) FROM splits")"
    expect "$l: chrome: one graph slice per graph" "${KV[cat_graph]:-}" "$(q "$db" "SELECT count(*) FROM graphs")"
    check_run "$json" "$db" "$l"
}

# check_run JSON DB LABEL: the rows of the whole run (docs/viewer.md): per process, the slices of its row
# "ggprof: where the time went" tile report's wall time (in order, no gap, no overlap) and each category's slices
# add up to report's figure for it; one slice per llama_decode call, region and idle span, on the row of the thread
# that made it, with its tokens, sequences, outputs and status.
check_run() {
    local json=$1 db=$2 l=$3
    "$GGPROF" report "$db" --format json > "$json.report.json" 2> /dev/null
    python3 - "$json" "$json.report.json" "$db" > "$json.run" 2> "$json.run.err" <<'PY'
import json, sqlite3, sys
from collections import Counter
ev = json.load(open(sys.argv[1]))["traceEvents"]
acc = json.load(open(sys.argv[2]))["accounting"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
x = [e for e in ev if e.get("ph") == "X"]
ns = lambda v: round(v * 1000)
tile, sums, rows = [], [], []
for a in acc:
    s = [e for e in x if e["cat"] == "run" and e["pid"] == a["pid"]]
    rows.append(len({e["tid"] for e in s}) == 1 and names.get((a["pid"], s[0]["tid"])) == "ggprof: where the time went" if s else False)
    gaps = sum(1 for p, q in zip(s, s[1:]) if ns(p["ts"]) + ns(p["dur"]) != ns(q["ts"]))
    tile.append("%d:%d/%d" % (a["pid"], sum(ns(e["dur"]) for e in s), gaps))
    got = Counter()
    for e in s:
        got[e["name"]] += ns(e["dur"])
    want = Counter({k: v for k, v in a["categories"].items() if v})
    sums.append("%d:%s" % (a["pid"], "ok" if got == want else "%s vs %s" % (dict(got), dict(want))))
print("run_tiles=" + " ".join(tile))
print("run_want=" + " ".join("%d:%d/0" % (a["pid"], a["wall_ns"]) for a in acc))
print("run_categories=" + " ".join(sums))
print("run_rows=" + str(int(all(rows))))
db = sqlite3.connect(sys.argv[3])
def table(sql):
    try:
        return sorted(db.execute(sql).fetchall())
    except sqlite3.DatabaseError: # a JSON profile: none
        return []
def tid_of(e):
    n = names.get((e["pid"], e["tid"]), "")
    return int(n.split()[1]) if n.startswith("thread ") else -1
got = sorted((e["pid"], tid_of(e), e["args"]["batch_id"], e["args"]["tokens"], e["args"]["sequences"], e["args"]["outputs"],
              e["args"]["status"], ns(e["dur"])) for e in x if e["cat"] == "batch")
want = table("SELECT pid, tid, batch_id, n_tokens, n_seqs, n_outputs, status, duration_ns FROM batches")
print("batches=%d/%d/%d" % (len(got), len(want), got == want))
got = sorted((e["pid"], tid_of(e), e["name"], e["args"]["depth"], ns(e["dur"])) for e in x if e["cat"] == "region")
want = table("SELECT pid, tid, name, depth, duration_ns FROM regions")
print("regions=%d/%d/%d" % (len(got), len(want), got == want))
# An idle span is its thread_idle row, or where a batch's or region's edge lies inside the row (the sampler's edges are
# estimates, the engine's exact), the row's widest piece between those edges: it lies within the row and crosses none.
b = [e for e in x if e["cat"] == "batch"]
t0 = table("SELECT start_ns FROM batches WHERE pid = %d AND batch_id = %d" % (b[0]["pid"], b[0]["args"]["batch_id"]))[0][0] \
    - ns(b[0]["ts"]) if b else 0 # the trace's time 0 on the database's clock
got = sorted((e["pid"], tid_of(e), t0 + ns(e["ts"]), t0 + ns(e["ts"]) + ns(e["dur"])) for e in x if e["cat"] == "idle")
want = table("SELECT pid, tid, start_ns, end_ns FROM thread_idle")
edges = table("SELECT pid, tid, start_ns FROM batches UNION ALL SELECT pid, tid, start_ns + duration_ns FROM batches"
              " UNION ALL SELECT pid, tid, start_ns FROM regions UNION ALL SELECT pid, tid, start_ns + duration_ns FROM regions")
def fits(g, w):
    inside = [e[2] for e in edges if e[:2] == w[:2] and w[2] < e[2] < w[3]]
    if not inside:
        return g == w
    return g[:2] == w[:2] and w[2] <= g[2] <= g[3] <= w[3] and not any(g[2] < e < g[3] for e in inside)
print("idle=%d/%d/%d" % (len(got), len(want), len(got) == len(want) and all(fits(g, w) for g, w in zip(got, want))))
PY
    local saved; saved=$(declare -p KV)
    load_kv "$json.run"
    expect "$l: chrome: each process's run row tiles report's wall (sum ns/gaps)" "${KV[run_tiles]:-missing}" "${KV[run_want]:-}"
    expect "$l: chrome: the run row's categories add up to report's" "${KV[run_categories]:-missing}" \
        "$(echo "${KV[run_want]:-}" | sed -E 's/:[0-9]+\/0/:ok/g')"
    expect "$l: chrome: the run slices on one row per process, named" "${KV[run_rows]:-}" 1
    for t in batches regions idle; do
        expect "$l: chrome: one $t slice per row of $t, on its thread, with its args" \
            "$(echo "${KV[$t]:-}" | awk -F/ '{ print ($1 == $2 && $3 == 1) ? "same" : $0 }')" same
    done
    eval "${saved/declare -A/declare -gA}" # the caller's checks read KV on
}

# ---------------------------------------------------------------- a CPU llama-completion run
db="$OUT/dense.db"
"$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 8 \
    -t 2 --no-warmup -no-cnv -s 1 > "$OUT/dense.log" 2>&1
expect "dense: record exits 0" "$?" 0
"$GGPROF" export "$db" --chrome "$OUT/dense.trace.json" --html "$OUT/dense.html" 2> "$OUT/export.err"
expect "dense: export --chrome --html exits 0" "$?" 0
check_chrome "$OUT/dense.trace.json" "$db" dense
# memory counters: one per backend of the process, each reaching what `ggprof memory` says the backend held at most
mem_max=$("$GGPROF" memory "$db" --format json | node -e '
    const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
    console.log(r.map((b) => "memory " + b.backend + "=" + b.max_held_bytes).sort().join("|"));')
expect "dense: chrome: a memory counter per backend, at its most what ggprof memory says" "${KV[counter_max]:-}" "$mem_max"
expect "dense: chrome: rows for the CPU backend, graphs, the run and the thread calling llama_decode" \
    "$(echo "${KV[track_names]:-}" | lane_names)" "CPU graphs run thread"
expect_ge "dense: chrome: llama_decode slices" "${KV[cat_batch]:-0}" 1
expect_ge "dense: chrome: llama.cpp's load and context calls as regions" \
    "$(q "$db" "SELECT count(*) FROM regions WHERE depth = -1 AND name IN ('llama_model_load_from_file', 'llama_init_from_model')")" 2

# ---------------------------------------------------------------- a window of the run (--from/--to)
# Graphs 2 to 5 of the run (the bounds half way between graph starts, from the trace's first time): the Chrome
# file of the window follows the same rules and holds what report --from/--to counts in it (OP and SYNC records:
# their number and their time), a part of the run, not all of it.
mid() { # N: seconds from the trace's start to half way between the starts of graphs N-1 and N (in time order)
    q "$db" "WITH t0 AS (SELECT min(t) AS t FROM (SELECT min(start_ns) AS t FROM events UNION ALL
        SELECT min(start_ns) FROM graph_list UNION ALL SELECT min(start_ns) FROM split_list)),
      g AS (SELECT start_ns, row_number() OVER (ORDER BY start_ns) - 1 AS k FROM graph_list)
      SELECT printf('%.9f', ((SELECT start_ns FROM g WHERE k = $1 - 1) + (SELECT start_ns FROM g WHERE k = $1)) / 2e9
        - (SELECT t FROM t0) / 1e9)"
}
from=$(mid 2)
to=$(mid 6)
"$GGPROF" export "$db" --chrome "$OUT/win.trace.json" --from "$from" --to "$to" 2> "$OUT/win.err"
expect "window: export --chrome --from --to exits 0" "$?" 0
node "$BR/check_chrome_trace.js" "$OUT/win.trace.json" > "$OUT/win.check" 2> "$OUT/win.check.err"
load_kv "$OUT/win.check"
expect "window: chrome: valid JSON with traceEvents" "${KV[valid_json]:-}${KV[has_trace_events]:-}" 11
for k in x_fields x_negative ns_not_exact not_monotonic bad_nesting unknown_phase m_fields op_args copy_args \
    tracks_without_name tracks_without_process_name flow_malformed flow_unbound flow_op_before_copy_end; do
    expect "window: chrome: $k" "${KV[$k]:-missing}" 0
done
"$GGPROF" report "$db" --from "$from" --to "$to" > "$OUT/win.report"
expect "window: report --from --to exits 0" "$?" 0
# report_sum TYPE FIELD: the sum of FIELD (count, total) over report's rows of TYPE ([OP, [SYNC], [COPY])
report_sum() {
    awk -v t="$1" -v f="$2=" '$1 == t { for (i = 1; i <= NF; i++) if (index($i, f) == 1) { v = substr($i, length(f) + 1)
        if (v == "") v = $(i + 1); n += v } } END { printf "%.2f\n", n }' "$OUT/win.report"
}
# chrome_sum CAT: slices of category CAT and their time (ms), as "N MS"
chrome_sum() {
    node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); let n = 0, us = 0;
        for (const e of d.traceEvents) if (e.ph === "X" && e.cat === process.argv[2]) { n++; us += e.dur; }
        console.log(n + " " + (us / 1000).toFixed(2));' "$OUT/win.trace.json" "$1"
}
for t in op:'[OP' sync:'[SYNC]'; do
    read -r n ms < <(chrome_sum "${t%%:*}")
    expect "window: chrome's ${t%%:*} slices are report's records of the window" "$n" "$(report_sum "${t#*:}" count | cut -d. -f1)"
    # report prints each row's total in ms to 2 decimals: the sums agree within a rounding per row
    rows=$(grep -c "^ *\\${t#*:}" "$OUT/win.report")
    expect "window: chrome's ${t%%:*} time is report's (ms, within rounding)" \
        "$(awk -v a="$ms" -v b="$(report_sum "${t#*:}" total)" -v r="$rows" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 0.005 * r + 0.01) ? "equal" : a " vs " b }')" equal
done
all_ops=$(q "$db" "SELECT count(*) FROM records WHERE type = 0")
expect "window: some ops, not all" "$(awk -v n="${KV[cat_op]:-0}" -v a="$all_ops" 'BEGIN { print (n > 0 && n < a) ? "part" : n " of " a }')" part
expect "window: graphs 2 to 5" "${KV[cat_graph]:-}" 4

# ---------------------------------------------------------------- a trace over --max-records
# The ops of one graph in every k, every graph and split slice; said on stderr and in the file, never silently.
"$GGPROF" export "$db" --chrome "$OUT/sampled.trace.json" --html "$OUT/sampled.html" --max-records 300 2> "$OUT/sampled.err"
expect "sampled: export exits 0" "$?" 0
expect "sampled: stderr says so, once per file" "$(grep -c "more than --max-records 300: it shows the records of one graph in every" "$OUT/sampled.err")" 2
node "$BR/check_chrome_trace.js" "$OUT/sampled.trace.json" > "$OUT/sampled.check" 2> "$OUT/sampled.check.err"
load_kv "$OUT/sampled.check"
for k in x_fields x_negative ns_not_exact not_monotonic bad_nesting unknown_phase m_fields op_args tracks_without_name; do
    expect "sampled: chrome: $k" "${KV[$k]:-missing}" 0
done
expect "sampled: chrome: every graph slice" "${KV[cat_graph]:-}" "$(q "$db" "SELECT count(*) FROM graphs")"
expect "sampled: chrome: every split slice" "${KV[cat_split]:-}" "$(q "$db" "SELECT count(*) FROM splits")"
expect "sampled: chrome: fewer op slices" "$(awk -v n="${KV[cat_op]:-0}" -v a="$(q "$db" "SELECT count(*) FROM records WHERE type = 0")" \
    'BEGIN { print (n > 0 && n < a) ? "fewer" : n " of " a }')" fewer
expect "sampled: chrome: the file says so" "$(head -c 2000 "$OUT/sampled.trace.json" | grep -c '"sampled":{"records":')" 1
expect "sampled: html: the page says so" "$(grep -c '"sampled":{"records":' "$OUT/sampled.html")" 1

# ---------------------------------------------------------------- the same model with two layers on an RPC backend
port=$((50200 + RANDOM % 5000))
"$LLAMA_BIN_DIR/ggml-rpc-server" -d CPU -p "$port" > "$OUT/rpc-server.log" 2>&1 &
rpc_pid=$!
# the server listens once its backends are up: seconds on a loaded machine
for _ in $(seq 300); do (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break; sleep 0.1; done
rdb="$OUT/rpc.db"
"$GGPROF" record -o "$rdb" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "The quick brown fox" -n 4 \
    -t 2 --no-warmup -no-cnv -s 1 --rpc "127.0.0.1:$port" -ngl 2 > "$OUT/rpc.log" 2>&1
expect "rpc: record exits 0" "$?" 0
kill "$rpc_pid" 2> /dev/null
wait "$rpc_pid" 2> /dev/null
expect_ge "rpc: copies recorded" "$(q "$rdb" "SELECT count(*) FROM records WHERE type = 1")" 1
"$GGPROF" export "$rdb" --chrome "$OUT/rpc.trace.json" --html "$OUT/rpc.html"
expect "rpc: export exits 0" "$?" 0
check_chrome "$OUT/rpc.trace.json" "$rdb" rpc
expect "rpc: chrome: rows for RPC, CPU, copies and graphs" "$(echo "${KV[track_names]:-}" | lane_names)" \
    "CPU RPC0 copies graphs run thread"

# ---------------------------------------------------------------- copies with known consumers (a hand-made profile)
# graph 0: split 0 on CPU; split 1 on GPU0 gets 'embd' (read by Qcur-0, node 3: not by node 2, which starts
# before the copy ends, nor ADD node 4, which comes later) and 'pos' (no op has its shape); split 2 on CPU gets
# 'Qcur-0' back (read by 'out', node 6). graph 1's copy has no op in its split. GPU0's nodes 7 and 8 overlap.
rec() { # type name backend split start dur tensor ne_src type_src graph node
    printf '    {"type": %s, "name": "%s", "backend_id": %s, "split_id": %s, "start_ns": %s, "duration_ns": %s, "bytes": 2048, "extra": null, "tensor_name": "%s", "ne": [64, 8, 1, 1], "out_type": %s, "n_src": %s, "ne_src": %s, "nb_src": [], "type_src": %s, "op_params": [], "sub_op": -1, "graph_id": %s, "node_index": %s, "pid": 4242, "tid": 4242, "sched_id": 1, "timing": 1, "wait_ns": 0}' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$([ "$1" = 1 ] && echo -1 || echo 0)" \
        "$(echo "$8" | grep -o '\[[-0-9][-0-9, ]*\]' | wc -l)" "$8" "$9" "${10}" "${11}"
}
{
    printf '{\n  "version": 3,\n  "profiler": "ggml",\n  "backends": [\n'
    printf '    {"id": 0, "name": "GPU0", "device": "GPU0", "device_type": 1, "pid": 4242, "sched_id": 1},\n'
    printf '    {"id": 1, "name": "CPU", "device": "CPU", "device_type": 0, "pid": 4242, "sched_id": 1}\n  ],\n  "records": [\n'
    rec 0 GET_ROWS 1 0 1000 500 embd '[[64, 100, 1, 1], [8, 1, 1, 1]]' '[0, 26]' 0 0; echo ,
    rec 2 cpu_barrier 1 0 1500 40 '' '[]' '[]' 0 -1; echo ,
    rec 1 copy_H2D -1 1 2000 300 embd '[[64, 8, 1, 1]]' '[0]' 0 -1; echo ,
    rec 1 copy_H2D -1 1 2400 100 pos '[[8, 3, 1, 1]]' '[26]' 0 -1; echo ,
    rec 0 MUL_MAT 0 1 1900 200 early '[[64, 64, 1, 1], [64, 8, 1, 1]]' '[1, 0]' 0 2; echo ,
    rec 0 MUL_MAT 0 1 3000 1000 Qcur-0 '[[64, 64, 1, 1], [64, 8, 1, 1]]' '[1, 0]' 0 3; echo ,
    rec 0 ADD 0 1 4100 100 x-0 '[[64, 8, 1, 1], [64, 8, 1, 1]]' '[0, 0]' 0 4; echo ,
    rec 1 copy_D2H -1 2 4300 200 Qcur-0 '[[64, 8, 1, 1]]' '[0]' 0 -1; echo ,
    rec 0 ADD 1 2 4600 100 out '[[64, 8, 1, 1]]' '[0]' 0 6; echo ,
    rec 0 MUL_MAT 0 1 5000 1000 p-0 '[[64, 64, 1, 1], [64, 8, 1, 1]]' '[1, 0]' 0 7; echo ,
    rec 0 MUL_MAT 0 1 5500 1000 q-0 '[[64, 64, 1, 1], [64, 8, 1, 1]]' '[1, 0]' 0 8; echo ,
    rec 1 copy_H2D -1 1 7000 100 embd '[[64, 8, 1, 1]]' '[0]' 1 -1; echo
    printf '  ]\n}\n'
} > "$OUT/flows.json"
"$GGPROF" export "$OUT/flows.json" --chrome "$OUT/flows.trace.json" --html "$OUT/flows.html"
expect "flows: export of a JSON profile exits 0" "$?" 0
check_chrome "$OUT/flows.trace.json" "$OUT/flows.json" flows
expect "flows: each copy flows into the first op of its split that reads its shape and type" "${KV[flow_targets]:-}" \
    "Qcur-0>out@6,embd>Qcur-0@3"
expect "flows: overlapping records get their own row" "${KV[track_names]:-}" \
    "CPU|GPU0|GPU0 (overlap 2)|copies|ggprof: where the time went"

# ---------------------------------------------------------------- the HTML page's data, without a browser
html_data() { # HTML: the embedded data's counts
    node -e '
        const s = require("fs").readFileSync(process.argv[1], "utf8");
        const m = s.match(/<script id="ggprof-data" type="application\/json">([\s\S]*?)<\/script>/);
        const d = JSON.parse(m[1]);
        // a column is a string of numbers, each ending with a character of 0-9A-V; "" is a column of zeros
        const cols = Object.values(d.cols).map((c) => c === "" ? d.n_shown : (c.match(/[0-9A-V]/g) || []).length);
        const count = d.stats.count.reduce((a, b) => a + b, 0);
        console.log([d.n_records, d.n_shown, new Set(cols).size === 1 ? cols[0] : -1, count, d.lanes.map((l) => l.name).join("|")].join(" "));
    ' "$1"
}
n=$(q "$db" "SELECT count(*) FROM records")
expect "html: every record embedded, columns of one length, stats over all" "$(html_data "$OUT/dense.html")" "$n $n $n $n CPU"
"$GGPROF" export "$db" --html "$OUT/sampled.html" --html-max-records 500
read -r total shown cols count lanes <<< "$(html_data "$OUT/sampled.html")"
expect "html-max-records: stats still count every record" "$total $count" "$n $n"
expect "html-max-records: timeline keeps one in ceil(total/N)" "$shown" "$(( (n + (n + 499) / 500 - 1) / ((n + 499) / 500) ))"
expect "html-max-records: a word is refused, exit 2" "$("$GGPROF" export "$db" --html-max-records lots --html "$OUT/x.html" > /dev/null 2>&1; echo $?)" 2
err=$("$GGPROF" export "$db" --chrome "$OUT/no/such/dir/t.json" 2>&1)
expect "an unwritable output fails naming the file" "$?:$(echo "$err" | grep -c "no/such/dir/t.json")" 2:1
expect "rpc: html: lanes for RPC, CPU and copies" "$(html_data "$OUT/rpc.html" | cut -d' ' -f5- | lane_names)" "CPU RPC0 copies"
expect "html: the page has no </script> inside the viewer" "$(grep -c '</script>' "$OUT/dense.html")" 2

# ---------------------------------------------------------------- in chromium
if ! nm_dir=$(bash "$BR/install.sh" 2> "$OUT/install.log"); then
    not_ok "browser: install chromium and playwright-core" "$(tail -n 3 "$OUT/install.log" | tr '\n' ' ')"
    exit 0
fi
# The Chrome files in speedscope (tests/browser/speedscope_check.js; tests/e2e/speedscope.sh has the demo's): each
# row's slices nest in its double arithmetic too, the copies and overlap rows among them.
for t in dense rpc flows; do
    json="$OUT/$t.trace.json"
    load_kv "$json.check"
    want="${KV[tracks]:-}/${KV[x_events]:-}/0/0"
    NODE_PATH="$nm_dir" node "$BR/speedscope_check.js" "$json" "$OUT" > "$json.speedscope" 2> "$json.speedscope.err"
    load_kv "$json.speedscope"
    expect "$t: speedscope: a profile per row, a slice per X event, none misnested or left open" \
        "${KV[profiles]:-}/${KV[slices]:-}/${KV[misnested]:-}/${KV[closed_at_end]:-}" "$want"
done
browse() { # HTML LABEL [VIEWER_CHECK_ARGS...]
    NODE_PATH="$nm_dir" node "$BR/viewer_check.js" "$1" "$OUT" "${@:3}" > "$1.browser" 2> "$1.browser.err"
    expect "$2: browser run exits 0" "$?" 0
    load_kv "$1.browser"
    expect "$2: no console error" "${KV[console_errors]:-missing}" 0
    expect "$2: no page error" "${KV[page_errors]:-missing}" 0
    expect "$2: no network request" "${KV[external_requests]:-missing}" 0
    expect "$2: hovering a MUL_MAT shows its tooltip" "${KV[tooltip_op]:-}${KV[tooltip_index_is_hovered]:-}" 11
    expect "$2: the tooltip names the tensor, shapes, types, bytes and GB/s" \
        "${KV[tooltip_tensor]:-}${KV[tooltip_fields]:-}${KV[tooltip_gbs]:-}" 151
}
# check_run_lanes REPORT_JSON LABEL: the page's "where the time went" lanes (KV[run_json], as viewer_check.js read
# them) against report --format json's accounting: one lane per process, its slices tiling wall_ns from the
# process's start (sum, no gap), each category's sum report's, every slice drawn in the whole view, which covers it.
check_run_lanes() {
    local got
    got=$(python3 -c 'import json,sys
acc = json.load(open(sys.argv[1]))["accounting"]
lanes = {r["pid"]: r for r in json.loads(sys.argv[2] or "[]")}
out = []
for a in acc:
    r = lanes.pop(a["pid"], None)
    if r is None:
        out.append("%d:no lane" % a["pid"]); continue
    want = {k: v for k, v in a["categories"].items() if v}
    out.append("%d:sum=%s gaps=%d drawn=%s view=%d cats=%s" % (a["pid"], "wall" if r["sum"] == a["wall_ns"] else r["sum"],
        r["gaps"], "all" if r["n"] > 0 and r["drawn"] == r["n"] else "%d/%d" % (r["drawn"], r["n"]), r["in_view"],
        "report" if r["cats"] == want else "%s vs %s" % (r["cats"], want)))
out += ["%d:extra lane" % p for p in lanes]
print(" ".join(out))' "$1" "${KV[run_json]:-}")
    expect "$2: html: a run lane per process tiling report's wall, its categories report's, all in view" "$got" \
        "$(python3 -c 'import json,sys; print(" ".join("%d:sum=wall gaps=0 drawn=all view=1 cats=report" % a["pid"]
            for a in json.load(open(sys.argv[1]))["accounting"]))' "$1")"
    expect "$2: html: the run lanes above the op lanes" "${KV[run_lanes_above_ops]:-}" 1
    expect "$2: html: hovering a run slice shows its category, start and duration" "${KV[run_tooltips]:-missing}" \
        "$(python3 -c 'import json,sys; print(" ".join("%d:1" % a["pid"] for a in json.load(open(sys.argv[1]))["accounting"]))' "$1")"
}
# check_thread_lanes DB LABEL: the page's thread lanes (KV[thread_json]) against the trace's tables: one lane per
# thread that has any, each batches and regions row a slice of its lane (the depth -1 ones llama.cpp's), each idle
# span too, every slice drawn in the whole view, each lane under its process's run lane and above the op lanes; and
# hovering a batch or a llama.cpp region shows its tooltip.
check_thread_lanes() {
    local got want
    got=$(python3 -c 'import json,sys
lanes = json.loads(sys.argv[1] or "[]"); s = lambda k: sum(l[k] for l in lanes)
print("lanes=%d batch=%d region=%d llama=%d idle=%d drawn=%s placed=%s" % (len(lanes), s("batch"), s("region"), s("llama"),
    s("idle"), "all" if all(l["drawn"] == l["n"] for l in lanes) else "some", "all" if all(l["placed"] for l in lanes) else "some"))' \
        "${KV[thread_json]:-}")
    want="lanes=$(q "$1" "SELECT count(*) FROM (SELECT pid, tid FROM batches UNION SELECT pid, tid FROM regions UNION SELECT pid, tid FROM thread_idle)")"
    want+=" batch=$(q "$1" "SELECT count(*) FROM batches") region=$(q "$1" "SELECT count(*) FROM regions")"
    want+=" llama=$(q "$1" "SELECT count(*) FROM regions WHERE depth = -1") idle=$(q "$1" "SELECT count(*) FROM thread_idle")"
    expect "$2: html: a lane per thread, a slice per batches, regions and thread_idle row, all drawn, under the run lane" \
        "$got" "$want drawn=all placed=all"
    expect "$2: html: hovering a batch or a llama.cpp region shows its tooltip" "${KV[thread_tooltips]:-missing}" "batch:1 region:1"
}

browse "$OUT/dense.html" dense
expect "dense: html: a memory track per backend (ggprof memory's)" \
    "$(echo "${KV[memory_tracks]:-}" | tr '|' '\n' | sed 's/ (pid [0-9]*)//' | sort | tr '\n' '|')" \
    "$(echo "$mem_max" | tr '|' '\n' | sed 's/=/:/' | sort | tr '\n' '|')"
expect "dense: html: each memory track's peak drawn (the red mark)" \
    "$(echo "${KV[memory_peak_pixels]:-}" | tr '|' '\n' | grep -cv '^209,36,47$')" 0
expect "dense: the page shows the records" "${KV[records_shown]:-}" "$n"
expect "dense: zoom preset 1 ms shows 1 ms" "${KV[preset_1ms_width_ns]:-}" 1000000
expect "dense: zoom preset 100 us shows 100 us, same centre" "${KV[preset_100us_width_ns]:-}:${KV[preset_keeps_centre]:-}" 100000:1
expect "dense: the wheel zooms in around the pointer" "${KV[wheel_zoomed_in]:-}${KV[wheel_keeps_pointer_time]:-}${KV[range_follows_wheel]:-}" 111
expect "dense: dragging pans by the distance moved" "${KV[drag_pans]:-}" 1
expect "dense: stats: one row per operation" "${KV[stats_lvl0]:-}" "$(q "$db" "SELECT count(*) FROM (SELECT DISTINCT type, name FROM records)")"
expect "dense: stats: counts add up to the records" "${KV[stats_lvl0_count_sum]:-}" "$n"
first=${KV[stats_first_op]:-}
expect "dense: stats: opening an operation shows its backend" "${KV[stats_lvl1_before]:-}:${KV[stats_lvl1_after]:-}" \
    "0:$(q "$db" "SELECT count(DISTINCT backend_id) FROM records WHERE name = '$first'")"
expect "dense: stats: opening the backend shows one row per source shapes" "${KV[stats_lvl2_after]:-}" \
    "$(q "$db" "SELECT count(DISTINCT ne_src) FROM records WHERE name = '$first'")"
expect "dense: stats: closing the operation hides its shapes" "${KV[stats_collapsed_lvl2]:-}" 0
expect "dense: search counts and highlights MUL_MAT" "${KV[search_count]:-}:${KV[search_changes_canvas]:-}" \
    "$(q "$db" "SELECT count(*) FROM records WHERE name = 'MUL_MAT'"):1"
expect "dense: heat map rows: the 4 layers and the rest" "${KV[heat_layers]:-}" "0,1,2,3,no layer"
expect "dense: a PNG screenshot was saved" "$(head -c 4 "$OUT/viewer.png" 2> /dev/null | tail -c 3)" PNG
# The findings panel (docs/viewer.md): report --format json's findings, the five first, in its order with its
# at_stake_ns, above the timeline; each process's accounting as a bar of report's categories.
"$GGPROF" report "$db" --format json > "$OUT/dense.report.json"
report_rows() { # REPORT_JSON: the five first findings' rules, their at_stake_ns, and the accounting, as the page gives them
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["findings"][:5]
print("|".join(x["rule"] for x in f)); print("|".join(str(x["at_stake_ns"]) for x in f))
print(";".join("%d:%s" % (a["pid"], ",".join("%s=%d" % kv for kv in a["categories"].items())) for a in d["accounting"]))' "$1"
}
{ read -r want_rules; read -r want_ns; read -r want_acc; } < <(report_rows "$OUT/dense.report.json")
check_run_lanes "$OUT/dense.report.json" dense
check_thread_lanes "$db" dense
expect_ge "dense: the trace has batches and llama.cpp's regions" "$(q "$db" "SELECT min((SELECT count(*) FROM batches), (SELECT count(*) FROM regions WHERE depth = -1))")" 1
expect_ge "dense: findings: report finds some" "$(echo "$want_rules" | tr '|' '\n' | grep -c .)" 1
expect "dense: findings panel: report's rules, in its order" "${KV[findings_rules]:-missing}" "$want_rules"
expect "dense: findings panel: report's at_stake_ns" "${KV[findings_ns]:-missing}" "$want_ns"
expect "dense: findings panel: above the timeline" "${KV[findings_panel_above_timeline]:-}" 1
expect "dense: accounting: a bar per process, report's categories" "${KV[accounting_bars]:-missing}" "$want_acc"
expect "dense: accounting: the bar's parts fill it" "${KV[accounting_bar_width_pct]:-}" 100.0
# A hostile tensor name in a finding's evidence (the logits, peak_tensor's tensor) is text on the page: the panel
# shows it exactly, and no element comes from it.
evil='</script><img src=x onerror=window.pwned=1>"&amp;'"'"'x'
cp "$db" "$OUT/evil.db"
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1])
c.execute("UPDATE nodes SET tensor_name = ? WHERE tensor_name = ?", (sys.argv[2], "result_output")); c.commit()' "$OUT/evil.db" "$evil"
"$GGPROF" report "$OUT/evil.db" --format json > "$OUT/evil.report.json"
expect "evil: report's peak_tensor names the hostile tensor" "$(python3 -c 'import json,sys
print([f["evidence"].get("node") for f in json.load(open(sys.argv[1]))["findings"] if f["rule"] == "peak_tensor"] == [sys.argv[2]])' \
    "$OUT/evil.report.json" "$evil")" True
"$GGPROF" export "$OUT/evil.db" --html "$OUT/evil.html"
expect "evil: export --html exits 0" "$?" 0
expect "evil: html: no tag comes from the name" "$(grep -c '<img' "$OUT/evil.html")" 0
browse "$OUT/evil.html" evil
expect "evil: findings panel: report's rules" "${KV[findings_rules]:-missing}" "$(report_rows "$OUT/evil.report.json" | head -n 1)"
expect "evil: findings panel: the name shown as text, exactly, in evidence and advice" "$(python3 -c 'import json,sys
f=[x for x in json.loads(sys.argv[1]) if x["rule"] == "peak_tensor"]
print(len(f) == 1 and f[0]["evidence"].get("node") == sys.argv[2] and sys.argv[2] in f[0]["advice"])' "${KV[findings_json]:-[]}" "$evil")" True
expect "evil: findings panel: no element from the name" "${KV[findings_foreign_elements]:-missing}" 0

# a short window: the op lanes lie below the fold, under the findings panel and the run lanes
browse "$OUT/rpc.html" rpc --height=450
"$GGPROF" report "$rdb" --format json > "$OUT/rpc.report.json"
check_run_lanes "$OUT/rpc.report.json" rpc
expect "rpc: lanes in the page" "$(echo "${KV[lanes]:-}" | lane_names)" "CPU RPC0 copies"
