# ggprof export --chrome read by speedscope (npm, pinned; tests/browser/speedscope_check.js drives its web app in
# Debian's chromium): a flame chart that rebuilds each row's stack from ts and ts + dur in doubles, as many viewers
# do. Every slice must nest there as it does in nanoseconds (no "Tried to end X when Y was on the top of the
# stack"), on the demo's trace (node-llama-cpp, the tiny model, as `make demo` records it) and on a hand-made worst
# case: hundreds of slices of odd nanoseconds end to end, hours into the run, nested in splits and graphs.
. "$(dirname "$0")/../lib.sh"
BR="$GGPROF_ROOT/tests/browser"

declare -A KV
load_kv() {
    KV=()
    while IFS='=' read -r k v; do [ -n "$k" ] && KV[$k]=$v; done < "$1"
}

if ! nm_dir=$(bash "$BR/install.sh" 2> "$OUT/install.log"); then
    not_ok "browser: install chromium, playwright-core and speedscope" "$(tail -n 3 "$OUT/install.log" | tr '\n' ' ')"
    exit 0
fi

# speedscope JSON LABEL [--misnests]: the Chrome file's own rules (check_chrome_trace.js), then speedscope's import:
# no misnested slice, none left open, every X event a slice of it, one profile per row. With --misnests, the file is
# one that misnests (the check must see it).
speedscope() {
    local json=$1 l=$2
    node "$BR/check_chrome_trace.js" "$json" > "$json.check" 2> "$json.check.err"
    load_kv "$json.check"
    local x=${KV[x_events]:-0} rows=${KV[tracks]:-0} nest=${KV[bad_nesting]:-missing}
    NODE_PATH="$nm_dir" node "$BR/speedscope_check.js" "$json" "$OUT" > "$json.speedscope" 2> "$json.speedscope.err"
    expect "$l: speedscope run exits 0" "$?" 0
    load_kv "$json.speedscope"
    expect "$l: speedscope imports it as a Trace Event Format profile" "${KV[imported_as]:-}" \
        "Importing as Trace Event Format profile"
    expect "$l: speedscope: one profile per row, one slice per X event" "${KV[profiles]:-}/${KV[slices]:-}/${KV[slices_closed]:-}" \
        "$rows/$x/$x"
    if [ "${3:-}" = --misnests ]; then
        expect_ge "$l: speedscope sees the misnested slices" "${KV[misnested]:-0}" 1
        return
    fi
    expect "$l: the slices of each row nest (in ns)" "$nest" 0
    expect "$l: speedscope: no misnested slice, none left open" "${KV[misnested]:-missing}/${KV[closed_at_end]:-missing}" 0/0
    expect "$l: speedscope: no error" "${KV[errors]:-missing}" 0
}

# decimal_ns IN OUT: IN with its times as ggprof wrote them before the binary grid, decimal nanoseconds ("1999.614")
decimal_ns() {
    python3 - "$1" "$2" << 'PY'
import json, re, sys
s = open(sys.argv[1]).read()
f = lambda m: '"%s":%.3f' % (m.group(1), round(float(m.group(2)) * 1000) / 1000)
open(sys.argv[2], "w").write(re.sub(r'"(ts|dur)":([0-9.]+)', f, s))
PY
}

# ---------------------------------------------------------------- a worst case, by hand
# abut HOURS OUT: 600 OP records end to end on one backend, of 1 to 99999 ns each (odd nanoseconds: no decimal of a
# microsecond is a double), HOURS into the run (a first record at its start), in 6 graphs of one split each, and
# a SYNC record nested at each op's start.
abut() {
    python3 - "$1" "$2" << 'PY'
import json, sys
base = {"backend_id": 0, "split_id": 0, "bytes": 4096, "extra": None, "ne": [64, 8, 1, 1], "out_type": 0, "n_src": 1,
        "ne_src": [[64, 8, 1, 1]], "nb_src": [], "type_src": [0], "op_params": [], "sub_op": -1, "pid": 4242,
        "tid": 4242, "sched_id": 1, "timing": 2, "wait_ns": 0}
recs = [dict(base, type=0, name="GET_ROWS", start_ns=1000, duration_ns=999, tensor_name="first", node_index=0, graph_id=0)]
t, seed = int(float(sys.argv[1]) * 3600e9) + 123, 1
for g in range(1, 7):
    for i in range(100):
        seed = (seed * 1103515245 + 12345) % 2**31
        d = seed % 99999 + 1
        recs.append(dict(base, type=0, name="ADD", start_ns=t, duration_ns=d, tensor_name="x-%d" % i, node_index=i, graph_id=g))
        recs.append(dict(base, type=2, name="cpu_barrier", start_ns=t, duration_ns=d // 3, tensor_name="", n_src=0,
                         ne_src=[], type_src=[], node_index=-1, graph_id=g))
        t += d
    t += 777
json.dump({"version": 3, "profiler": "ggml", "backends": [{"id": 0, "name": "CPU", "device": "CPU",
           "device_type": 0, "pid": 4242, "sched_id": 1}], "records": recs}, open(sys.argv[2], "w"), indent=1)
PY
}
grid_bits() { node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).otherData.time_grid_bits)' "$1"; }
abut 2 "$OUT/abut.json"
"$GGPROF" export "$OUT/abut.json" --chrome "$OUT/abut.trace.json" 2> "$OUT/abut.err"
expect "abut: export --chrome exits 0" "$?" 0
expect "abut: 2 h: the finest grid, 2^-20 us" "$(grid_bits "$OUT/abut.trace.json")" 20
speedscope "$OUT/abut.trace.json" abut
expect "abut: the 1201 records are slices" "$(node -e 'const e = JSON.parse(require("fs").readFileSync(process.argv[1])).traceEvents;
    console.log(e.filter((x) => x.cat === "op" || x.cat === "sync").length)' "$OUT/abut.trace.json")" 1201
decimal_ns "$OUT/abut.trace.json" "$OUT/abut.decimal.json"
speedscope "$OUT/abut.decimal.json" "abut, decimal ns (before)" --misnests
# 30 hours into the run: a coarser grid keeps the latest instant below 2^53 points (docs/viewer.md)
abut 30 "$OUT/long.json"
"$GGPROF" export "$OUT/long.json" --chrome "$OUT/long.trace.json" 2> "$OUT/long.err"
expect "long: export --chrome exits 0" "$?" 0
expect "long: 30 h: a grid of 2^-16 us" "$(grid_bits "$OUT/long.trace.json")" 16
speedscope "$OUT/long.trace.json" long

# ---------------------------------------------------------------- the demo's trace
cp "$GGPROF_ROOT/samples/node/script.mjs" "$NODE_PROJECT_DIR/ggprof-speedscope.mjs"
db="$OUT/node.db"
(cd "$NODE_PROJECT_DIR" && "$GGPROF" record -o "$db" -- node ggprof-speedscope.mjs "$GGUF_DENSE" 32) > "$OUT/node.log" 2>&1
expect "demo: record exits 0" "$?" 0
"$GGPROF" export "$db" --chrome "$OUT/node.trace.json" 2> "$OUT/node.err"
expect "demo: export --chrome exits 0" "$?" 0
speedscope "$OUT/node.trace.json" demo
# the rows beside the backends' are in it: where the time went, llama_decode calls, llama.cpp's regions
load_kv "$OUT/node.trace.json.check"
expect "demo: the trace has run, batch and region slices" \
    "$(( ${KV[cat_run]:-0} > 0 ))$(( ${KV[cat_batch]:-0} > 0 ))$(( ${KV[cat_region]:-0} > 0 ))" 111
decimal_ns "$OUT/node.trace.json" "$OUT/node.decimal.json"
speedscope "$OUT/node.decimal.json" "demo, decimal ns (before)" --misnests
