# Capture control on record: llama-server under a SIGUSR1 window with concurrent requests (on 127.0.0.1 only),
# time per request from its llama_decode batches, --delay/--duration and --sample on llama-completion.
. "$(dirname "$0")/../lib.sh"
COMPLETION=("$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -t 2 --no-warmup -no-cnv -s 1)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# ask NAME PROMPT N: one completion request in the background; its response in $OUT/NAME.json. Greedy (temperature
# 0): the random-weight model's sampled tokens can fail the server's own output check; greedy output is the same
# every run.
ask() {
    curl -s --max-time 120 -X POST "http://127.0.0.1:$PORT/completion" \
        -d "{\"prompt\": \"$2\", \"n_predict\": $3, \"cache_prompt\": false, \"temperature\": 0, \"seed\": 1}" > "$OUT/$1.json" &
}
# counts NAME...: "prompt:generated" of each response, one a line (the server's own counts)
counts() {
    for n in "$@"; do
        node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
            console.log(r.tokens_evaluated + ":" + r.tokens_predicted)' "$OUT/$n.json" 2>/dev/null || echo "no answer"
    done
}

# wait_requests: until every request sent has its answer (the server runs on)
wait_requests() {
    local p
    for p in $(jobs -p); do [ "$p" = "$rec" ] || wait "$p"; done
}

# ---- llama-server: recording starts paused; requests before, in and after one SIGUSR1 window
"$GGPROF" record -o "$OUT/server.db" --start-paused --snapshot-every 0.5 -- "$LLAMA_BIN_DIR/llama-server" -m "$GGUF_DENSE" \
    --host 127.0.0.1 --port "$PORT" -np 2 -c 1024 -t 2 --threads-http 4 > "$OUT/server.log" 2>&1 &
rec=$!
for _ in $(seq 1 150); do
    curl -s "http://127.0.0.1:$PORT/health" 2> /dev/null | grep -q '"ok"' && break
    sleep 0.2
done
expect "llama-server under record answers /health" "$(curl -s "http://127.0.0.1:$PORT/health")" '{"status":"ok"}'
ask before1 "the first request before the window" 5
ask before2 "another early one" 6
wait_requests
kill -USR1 "$rec"
sleep 0.3
ask in1 "a story about a fox" 7
ask in2 "a story about a dog and a cat" 9
ask in3 "once upon a time" 8
wait_requests
sleep 1.2 # a snapshot is written every 0.5 s
snap=$OUT/server.snapshot.db
expect "--snapshot-every: the trace so far, while the server runs, with the window's graphs" \
    "$(q "$snap" "SELECT count(*) > 0, (SELECT value FROM meta WHERE key = 'snapshot') FROM graphs")" "1|1"
"$GGPROF" report "$snap" > "$OUT/snap.report" 2>&1
expect "--snapshot-every: report reads it" "$?:$(grep -c '^=== Trace ===' "$OUT/snap.report")" "0:1"
rm -f "$snap"
kill -USR2 "$rec"
for _ in $(seq 1 50); do [ -f "$snap" ] && break; sleep 0.1; done
expect "SIGUSR2: a snapshot now, its graphs in the window" "$(q "$snap" "SELECT count(*) > 0 FROM graphs g, windows w
    WHERE g.start_ns BETWEEN w.start_ns AND w.end_ns")" 1
kill -USR1 "$rec"
ask after1 "after the window closed" 4
wait_requests
kill -TERM "$rec"
wait "$rec"
expect "record ends when the server does (SIGTERM forwarded)" "$?" 0
expect "the snapshot goes once the whole trace is written" "$([ -e "$OUT/server.snapshot.db" ] && echo left || echo gone)" gone
for n in before1 before2 in1 in2 in3 after1; do
    expect "the server answered '$n'" "$(counts "$n" | grep -c '^[0-9]*:[0-9]*$')" 1
done
db=$OUT/server.db
expect "one window, opened and closed by SIGUSR1" "$(q "$db" "SELECT count(*), opened_by, closed_by FROM windows")" "1|signal|signal"
expect "every graph began inside the window" "$(q "$db" "SELECT count(*) FROM graphs g, windows w
    WHERE g.start_ns < w.start_ns OR g.start_ns > w.end_ns")" 0
expect "every batch began inside the window" "$(q "$db" "SELECT count(*) FROM batches b, windows w
    WHERE b.start_ns < w.start_ns OR b.start_ns > w.end_ns")" 0
expect_ge "the window holds graphs and their records" "$(q "$db" "SELECT count(*) FROM records")" 100
expect "every graph names the llama_decode call it was computed in" "$(q "$db" "SELECT count(*) FROM graphs
    WHERE batch_id IS NULL OR batch_id NOT IN (SELECT batch_id FROM batches)")" 0
expect_ge "the server batched two sequences at once" "$(q "$db" "SELECT max(n_seqs) FROM batches")" 2
"$GGPROF" rollup "$db" --by request --format csv > "$OUT/requests.csv"
expect "rollup --by request: the window's three requests, each with the server's prompt and generated tokens" \
    "$(tail -n +2 "$OUT/requests.csv" | awk -F, '{ print $5 ":" $7 }' | sort | paste -sd' ')" \
    "$(counts in1 in2 in3 | sort | paste -sd' ')"
expect "rollup --by request: ms per token is generation time over the decoded tokens" "$(tail -n +2 "$OUT/requests.csv" |
    awk -F, '{ d = $7 - 1; if (d > 0 && ($8 / d - $9 > 0.002 || $9 - $8 / d > 0.002)) bad++ } END { print bad + 0 }')" 0
"$GGPROF" report "$db" > "$OUT/report.txt"
expect "report lists the window" "$(grep -c 'opened by signal, closed by signal' "$OUT/report.txt")" 1

# ---- export --otlp: the window's batches and graphs as OTLP/JSON spans, checked against the mapping
"$GGPROF" export "$db" --otlp "$OUT/server.jsonl" 2> "$OUT/otlp.err"
expect "export --otlp writes the file" "$?" 0
node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(l => l.length);
    const hex = (s, n) => typeof s === "string" && new RegExp("^[0-9a-f]{" + n + "}$").test(s) && !/^0+$/.test(s);
    const nanos = s => typeof s === "string" && /^[0-9]+$/.test(s);
    const value = v => v && Object.keys(v).length === 1 && (typeof v.stringValue === "string" || typeof v.boolValue ===
        "boolean" || typeof v.doubleValue === "number" || (typeof v.intValue === "string" && /^-?[0-9]+$/.test(v.intValue)));
    const attrs = a => Array.isArray(a) && a.every(x => typeof x.key === "string" && value(x.value));
    let bad = [], spans = 0, roots = 0, children = 0, decode = 0, ids = new Set();
    for (const line of lines) {
        const req = JSON.parse(line);
        if (Object.keys(req).join() !== "resourceSpans") bad.push("request keys " + Object.keys(req));
        for (const rs of req.resourceSpans) {
            if (!attrs(rs.resource.attributes)) bad.push("resource attributes");
            if (!rs.resource.attributes.some(a => a.key === "service.name")) bad.push("no service.name");
            for (const ss of rs.scopeSpans) {
                if (ss.scope.name !== "ggprof") bad.push("scope");
                const here = new Map(ss.spans.map(s => [s.spanId, s]));
                for (const s of ss.spans) {
                    spans++;
                    if (!hex(s.traceId, 32) || !hex(s.spanId, 16)) bad.push("ids " + s.traceId + " " + s.spanId);
                    if (ids.has(s.spanId)) bad.push("span id twice " + s.spanId);
                    ids.add(s.spanId);
                    if (!nanos(s.startTimeUnixNano) || !nanos(s.endTimeUnixNano)) bad.push("times not decimal strings");
                    if (BigInt(s.endTimeUnixNano) < BigInt(s.startTimeUnixNano)) bad.push("ends before it starts");
                    if (BigInt(s.startTimeUnixNano) < 1500000000000000000n) bad.push("not Unix time");
                    if (s.kind !== 1 || typeof s.name !== "string" || !attrs(s.attributes)) bad.push("span fields");
                    if (s.name === "llama_decode") decode++;
                    if (s.parentSpanId === undefined) { roots++; continue; }
                    const p = here.get(s.parentSpanId);
                    if (!hex(s.parentSpanId, 16) || !p || p.traceId !== s.traceId) bad.push("parent not in its trace");
                    else if (BigInt(s.startTimeUnixNano) < BigInt(p.startTimeUnixNano) ||
                             BigInt(s.endTimeUnixNano) > BigInt(p.endTimeUnixNano)) bad.push("child outside its parent");
                    children++;
                }
            }
        }
    }
    console.log(bad.length ? "bad: " + [...new Set(bad)].slice(0, 3).join("; ") : [lines.length, spans, roots, children, decode].join(":"));
' "$OUT/server.jsonl" > "$OUT/otlp.check" 2>&1
expect "export --otlp: OTLP/JSON field names, hex ids, nanosecond strings; a line per batch; batches the roots,
    graphs their children" "$(cat "$OUT/otlp.check")" "$(q "$db" "SELECT (SELECT count(*) FROM batches) || ':' ||
    ((SELECT count(*) FROM batches) + (SELECT count(*) FROM graphs)) || ':' || (SELECT count(*) FROM batches) || ':' ||
    (SELECT count(*) FROM graphs) || ':' || (SELECT count(*) FROM batches WHERE api = 'decode')")"

# ---- export --html: the window in the page (a band on the axis, the rest greyed), drawn without an error
"$GGPROF" export "$OUT/server.db" --html "$OUT/server.html"
expect "export --html: the page's data holds the window" "$(node -e '
    const s = require("fs").readFileSync(process.argv[1], "utf8");
    const d = JSON.parse(s.match(/<script id="ggprof-data" type="application\/json">([\s\S]*?)<\/script>/)[1]);
    const w = d.windows;
    console.log(w.length + ":" + w[0][2] + ":" + w[0][3] + ":" + (w[0][1] > w[0][0]))' "$OUT/server.html")" "1:signal:signal:true"
if nm_dir=$(bash "$GGPROF_ROOT/tests/browser/install.sh" 2> "$OUT/install.log"); then
    NODE_PATH="$nm_dir" node "$GGPROF_ROOT/tests/browser/viewer_check.js" "$OUT/server.html" "$OUT" > "$OUT/server.browser" 2>&1
    expect "export --html: chromium draws the page, windows included, with no console or page error" \
        "$(grep -E '^(console_errors|page_errors)=' "$OUT/server.browser" | sort | paste -sd' ')" "console_errors=0 page_errors=0"
else
    not_ok "export --html: install chromium and playwright-core" "$(tail -n 2 "$OUT/install.log" | tr '\n' ' ')"
fi

# ---- --delay and --duration on llama-completion: the program runs to its end, recording stops in between. A 2 s
# window: on a loaded machine the start alone took longer than 0.8 s, and a 0.5 s window saw no graph; 1,500 tokens
# (3 s or more here) go on after it.
"$GGPROF" record -q -o "$OUT/window.db" --delay 0.3 --duration 2 -- "${COMPLETION[@]}" -p "hello" -n 1500 \
    > "$OUT/window.out" 2> "$OUT/window.err"
expect "--delay/--duration: the program ran to its end" "$?" 0
db=$OUT/window.db
expect "--delay/--duration: one window, opened by the delay, closed by the duration" \
    "$(q "$db" "SELECT opened_by, closed_by, (end_ns - start_ns) BETWEEN 2e9 AND 2.2e9 FROM windows")" "delay|duration|1"
expect "--delay/--duration: graphs only inside it" "$(q "$db" "SELECT count(*) FROM graphs g, windows w
    WHERE g.start_ns < w.start_ns OR g.start_ns > w.end_ns")" 0
expect_ge "--delay/--duration: ... and some" "$(q "$db" "SELECT count(*) FROM graphs")" 5
expect "--delay/--duration: fewer graphs than the 1,500 tokens" "$(q "$db" "SELECT count(*) < 1500 FROM graphs")" 1

# ---- --max-mb 1 (the flight recorder) on a run that writes about 2 MB of records: the last ones kept
"$GGPROF" record -q -o "$OUT/flight.db" --max-mb 1 -- "${COMPLETION[@]}" -p "hello" -n 600 > /dev/null 2>&1 &
rec=$!
peak=0
while kill -0 "$rec" 2> /dev/null; do
    size=$(cat "$OUT"/flight.db.spill.* 2> /dev/null | wc -c) # the records' segments (descriptions are kept whole)
    [ "$size" -gt "$peak" ] && peak=$size
    sleep 0.05
done
wait "$rec"
expect "--max-mb 1: the program ran to its end" "$?" 0
db=$OUT/flight.db
expect "--max-mb 1: the spill's segments never held more than the bound and one segment (1.25 MB)" \
    "$([ "$peak" -gt 0 ] && [ "$peak" -le $((1024 * 1024 + 256 * 1024)) ] && echo yes || echo "peak $peak")" yes
expect "--max-mb 1: the trace holds the last graphs, up to the 600th token" "$(q "$db" "SELECT max(graph_id) FROM graphs")" 599
expect "--max-mb 1: ... and not the first" "$(q "$db" "SELECT min(graph_id) > 0 FROM graphs")" 1
expect "--max-mb 1: whole graphs: every record's graph is there" "$(q "$db" "SELECT count(*) FROM records
    WHERE graph_id NOT IN (SELECT graph_id FROM graphs)")" 0
expect "--max-mb 1: the graphs dropped and the graphs kept add up to the 600" "$(q "$db" "SELECT (SELECT count(*) FROM graphs)
    + (SELECT value FROM meta WHERE key = 'flight_dropped_graphs')")" 600
"$GGPROF" report "$db" > "$OUT/flight.report"
expect "--max-mb 1: memory is kept whole: the compute buffer allocated before the first graph (or memory is off, said)" \
    "$(q "$db" "SELECT (SELECT count(*) FROM buffers WHERE kind = 'compute' AND size > 0) = 1
        OR EXISTS (SELECT 1 FROM notes WHERE text LIKE '%profiling goes on without memory records%')")" 1
expect "--max-mb 1: report says how much was dropped" "$(grep -c 'flight recorder (--max-mb 1): the oldest' "$OUT/flight.report")" 1
expect "--max-mb 1: no spill segment is left behind" "$(ls "$OUT"/flight.db.spill* 2> /dev/null | wc -l)" 0

# ---- --sample 10: every graph at level graph, one in ten with its ops
"$GGPROF" record -q -o "$OUT/sample.db" --sample 10 -- "${COMPLETION[@]}" -p "hello" -n 40 > /dev/null 2>&1
db=$OUT/sample.db
expect "--sample 10: every graph recorded" "$(q "$db" "SELECT count(*) FROM graphs")" 40
expect "--sample 10: ops in the graphs whose id ten divides, and in no other" \
    "$(q "$db" "SELECT group_concat(DISTINCT graph_id % 10) FROM records")" 0
expect "--sample 10: every one of those has its ops" "$(q "$db" "SELECT count(DISTINCT graph_id) FROM records")" 4

# ---- bad values
"$GGPROF" record --delay soon -- true > /dev/null 2> "$OUT/bad.err"
expect "--delay soon: exit 2, one line" "$?:$(wc -l < "$OUT/bad.err"):$(grep -c "'soon' is not a number of seconds" "$OUT/bad.err")" "2:1:1"
"$GGPROF" record --start-paused --delay 1 -- true > /dev/null 2> "$OUT/bad2.err"
expect "--start-paused with --delay: exit 2" "$?:$(grep -c 'give one' "$OUT/bad2.err")" "2:1"
