# record --metrics under a real Prometheus (Debian's, on 127.0.0.1, scraping every second): two llama-servers recorded
# with --metrics under a bounded concurrent load; PromQL through Prometheus's HTTP API agrees with each server's
# trace, the request counts and tokens with the servers' own; promtool finds nothing wrong in the endpoints' output,
# nor in the exposition writer's output for hostile label values (tests/unit/test_metrics.c).
. "$(dirname "$0")/../lib.sh"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
command -v prometheus > /dev/null && command -v promtool > /dev/null || { not_ok "prometheus" "not installed (tests/deps.sh)"; exit 0; }

# ---- the exposition writer on hostile strings: promtool accepts it
"$(dirname "$GGPROF")/../tests/test_metrics" "$OUT/hostile.prom" text
expect "promtool accepts the exposition of hostile label values" "$(promtool check metrics < "$OUT/hostile.prom" 2>&1; echo "rc=$?")" "rc=0"
expect "the hostile values are all there, escaped" "$(grep -c '^ggml_op_seconds_total{' "$OUT/hostile.prom")" 6

# ---- two servers, each under record --metrics on a port of its own choosing
recs=() ports=() metrics=()
for i in 1 2; do
    ports[i]=$(free_port)
    "$GGPROF" record -o "$OUT/s$i.db" --metrics 127.0.0.1:0 -- "$LLAMA_BIN_DIR/llama-server" -m "$GGUF_DENSE" \
        --host 127.0.0.1 --port "${ports[i]}" -np 2 -c 1024 -t 1 > "$OUT/s$i.log" 2>&1 &
    recs[i]=$!
done
for i in 1 2; do
    for _ in $(seq 1 150); do
        metrics[i]=$(sed -n 's|^ggprof: record: metrics at http://\([^/]*\)/metrics$|\1|p' "$OUT/s$i.log")
        [ -n "${metrics[i]}" ] && curl -s "http://127.0.0.1:${ports[i]}/health" 2> /dev/null | grep -q '"ok"' && break
        sleep 0.2
    done
    expect "server $i: record prints where --metrics listens, on 127.0.0.1" "${metrics[i]%:*}" 127.0.0.1
done
expect "the endpoint is read-only" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://${metrics[1]}/metrics")" 405
expect "anything but /metrics is not found" "$(curl -s -o /dev/null -w '%{http_code}' "http://${metrics[1]}/x")" 404
expect "OpenMetrics when the Accept header asks" "$(curl -s -H 'Accept: application/openmetrics-text;version=1.0.0' \
    "http://${metrics[1]}/metrics" | tail -n 1)" "# EOF"

pport=$(free_port)
cat > "$OUT/prometheus.yml" << YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ggprof
    static_configs:
      - targets: ['${metrics[1]}', '${metrics[2]}']
YML
prometheus --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/tsdb" --web.listen-address="127.0.0.1:$pport" \
    > "$OUT/prometheus.log" 2>&1 &
prom=$!
for _ in $(seq 1 100); do curl -s "http://127.0.0.1:$pport/-/ready" 2> /dev/null | grep -qi ready && break; sleep 0.2; done

# promql EXPR: one line per series, "instance label-values... value"
promql() {
    curl -s "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" | node -e '
        const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
        if (r.status !== "success") { console.log("error " + r.error); process.exit(0); }
        for (const s of r.data.result) {
            const m = s.metric, keys = Object.keys(m).filter(k => k !== "instance").sort();
            console.log([m.instance || "-", ...keys.map(k => m[k]), s.value[1]].join(" "));
        }'
}

# Prometheus's discovery hands targets to the scrapers after about 5 s: the load starts once both are scraped
for _ in $(seq 1 100); do [ "$(promql 'sum(up{job="ggprof"})')" = "- 2" ] && break; sleep 0.3; done
expect "Prometheus scrapes both endpoints" "$(promql 'sum(up{job="ggprof"})')" "- 2"

# ---- the load: on each server, six requests, two at a time
ask() { # SERVER NAME PROMPT N
    curl -s --max-time 120 -X POST "http://127.0.0.1:${ports[$1]}/completion" -d "{\"prompt\": \"$3\", \"n_predict\": $4,
        \"cache_prompt\": false, \"temperature\": 0, \"seed\": 1}" > "$OUT/s$1-$2.json"
}
for round in 1 2 3; do
    for i in 1 2; do
        ask "$i" "r${round}a" "a story about a fox number $round" $((4 + round)) &
        ask "$i" "r${round}b" "once upon a time" $((3 + round)) &
    done
    wait $(jobs -p | grep -v -e "^${recs[1]}$" -e "^${recs[2]}$" -e "^$prom$")
done
# Every request has ended (idle 2 s) and been scraped since
sleep 4
expect "Prometheus still scrapes both endpoints after the load" "$(promql 'sum(up{job="ggprof"})')" "- 2"
promql 'sum by (instance, op) (ggml_op_seconds_total)' > "$OUT/op_seconds.txt"
promql 'sum by (instance, op) (ggml_op_calls_total)' > "$OUT/op_calls.txt"
promql 'sum by (instance) (llama_requests_total)' > "$OUT/requests.txt"
promql 'sum by (instance, phase) (llama_request_tokens_total)' > "$OUT/tokens.txt"
promql 'histogram_quantile(0.5, sum by (instance, le) (llama_request_seconds_bucket))' > "$OUT/p50.txt"
promql 'sum by (instance) (llama_request_seconds_sum)' > "$OUT/latency_sum.txt"
for i in 1 2; do
    curl -s "http://${metrics[i]}/metrics" > "$OUT/s$i.prom"
    expect "server $i: promtool check metrics finds no problem" "$(promtool check metrics < "$OUT/s$i.prom" 2>&1; echo "rc=$?")" "rc=0"
done
for i in 1 2; do kill -TERM "${recs[i]}"; wait "${recs[i]}"; done
kill -TERM "$prom"; wait "$prom" 2> /dev/null

for i in 1 2; do
    db=$OUT/s$i.db inst=${metrics[i]}
    # op time and calls: Prometheus's last scrape against the whole trace (nothing ran after the load)
    q "$db" "SELECT name, sum(duration_ns) / 1e9, count(*) FROM records WHERE type = 0 GROUP BY name ORDER BY name" > "$OUT/trace$i.txt"
    expect_ge "server $i: the trace has MUL_MAT records" "$(grep -c '^MUL_MAT|' "$OUT/trace$i.txt")" 1
    expect "server $i: sum by (op) (ggml_op_seconds_total) is the trace's op time, op by op" "$(awk -v inst="$inst" '
        FNR == NR { if ($1 == inst) prom[$2] = $3; next }
        { split($0, f, "|"); n++; if (!(f[1] in prom) || prom[f[1]] - f[2] > 1e-6 * f[2] + 1e-9 || f[2] - prom[f[1]] > 1e-6 * f[2] + 1e-9) bad = bad " " f[1] }
        END { print (n > 0 && bad == "") ? "agree" : "differ:" bad }' "$OUT/op_seconds.txt" "$OUT/trace$i.txt")" agree
    expect "server $i: ggml_op_calls_total is the trace's count of OP records, op by op" "$(awk -v inst="$inst" '
        FNR == NR { if ($1 == inst) prom[$2] = $3; next }
        { split($0, f, "|"); n++; if (!(f[1] in prom) || prom[f[1]] != f[3]) bad = bad " " f[1] }
        END { print (n > 0 && bad == "") ? "agree" : "differ:" bad }' "$OUT/op_calls.txt" "$OUT/trace$i.txt")" agree
    # requests: the server answered six; Prometheus, rollup --by request and the server's own counts agree
    "$GGPROF" rollup "$db" --by request --format csv > "$OUT/rollup$i.csv"
    expect "server $i: rollup --by request lists the six requests the server answered" "$(tail -n +2 "$OUT/rollup$i.csv" | wc -l)" 6
    expect "server $i: llama_requests_total is the same six" "$(awk -v inst="$inst" '$1 == inst { print $2 }' "$OUT/requests.txt")" 6
    served=$(for f in "$OUT"/s$i-*.json; do node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        console.log(r.tokens_evaluated + " " + r.tokens_predicted)' "$f"; done | awk '{ p += $1; g += $2 } END { print p " " g }')
    expect "server $i: llama_request_tokens_total (prompt, generation) are the server's own counts" \
        "$(awk -v inst="$inst" '$1 == inst { v[$2] = $3 } END { print v["prompt"] " " v["generation"] }' "$OUT/tokens.txt")" "$served"
    # latency: a request lasts at least its batches' decode time; the median lies in the histogram's range
    expect "server $i: request latencies are at least their batches' llama_decode time" "$(awk -F, -v inst="$inst" '
        FNR == NR { if ($0 ~ "^" inst " ") { split($0, f, " "); sum = f[2] }; next }
        FNR > 1 { dec += ($6 + $8) / 1e3 } END { print (sum >= dec * (1 - 1e-6) && dec > 0) ? "yes" : "no: " sum " < " dec }' \
        "$OUT/latency_sum.txt" "$OUT/rollup$i.csv")" yes
    expect "server $i: histogram_quantile(0.5) of request latency is a latency" "$(awk -v inst="$inst" '
        $1 == inst { print ($2 > 0 && $2 <= 300) ? "yes" : "no: " $2 }' "$OUT/p50.txt")" yes
done
