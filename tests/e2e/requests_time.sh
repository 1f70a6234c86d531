# Per request accounting (docs/findings.md, "Per request"): llama-servers answering two requests 2 s apart (one
# slot) and two at once (-np 2: batches shared); report --format json's requests read with python3 against
# rollup --by request, the batches read with sqlite3, and the server's own answers (`timings.prompt_n`,
# `predicted_n` per request, matched by `id_slot`).
. "$(dirname "$0")/../lib.sh"

# check_requests DB LABEL N ANSWER...: the N requests of DB's server against rollup, the batches and the answers
# (the server's JSON answers, in the order of their requests' first batch).
check_requests() {
    local db=$1 l=$2 n=$3
    shift 3
    "$GGPROF" report "$db" --format json > "$OUT/$l.json"
    expect "$l: report --format json exits 0" "$?" 0
    "$GGPROF" rollup "$db" --by request --format json > "$OUT/$l.rollup.json"
    "$GGPROF" report "$db" > "$OUT/$l.report"
    # the batches of the requests, each once (the warm-up before the first request is none of them)
    local batches_ns
    batches_ns=$(python3 -c 'import json, sys
r = [q for p in json.load(open(sys.argv[1]))["accounting"] for q in p.get("requests", [])]
print(min(q["first_batch"] for q in r) if r else -1)' "$OUT/$l.json")
    batches_ns=$(sqlite3 "$db" "SELECT sum(duration_ns) FROM batches WHERE status = 0 AND batch_id >= $batches_ns")
    python3 - "$OUT/$l.json" "$OUT/$l.rollup.json" "$batches_ns" "$@" > "$OUT/$l.facts" <<'PY'
import json, sys
acc = json.load(open(sys.argv[1]))["accounting"]
rollup = json.load(open(sys.argv[2]))
batches_ns = int(sys.argv[3] or 0)
answers = [json.load(open(a)) for a in sys.argv[4:]]
reqs = [q for p in acc for q in p.get("requests", [])]
f = {}
f["requests"] = len(reqs)
f["rollup_requests"] = len(rollup)
cats = ["prompt", "generation", "graph_build", "shared", "other_requests", "idle", "host"]
f["category_names"] = " ".join(sorted(set(k for q in reqs for k in q["categories"]))) or "-"
f["not_adding_up"] = sum(1 for q in reqs if sum(q["categories"].values()) != q["wall_ns"] or
                         min(q["categories"].values()) < 0)
f["without_time"] = sum(1 for q in reqs if q["wall_ns"] <= 0 or q["categories"]["prompt"] <= 0
                        or q["categories"]["generation"] <= 0)
# the requests' own part of their batches (token shares of a shared batch) add up to the batches, each once
own = sum(q["categories"][k] for q in reqs for k in ("prompt", "generation", "graph_build"))
f["own_vs_batches"] = "ok" if reqs and abs(own - batches_ns) <= 4 * sum(q["batches"] for q in reqs) else "%d != %d" % (own, batches_ns)
# ttft, then per_token for each decode after it: the wall (to a ns per decode, the division's remainder)
f["ttft_per_token_not_wall"] = sum(1 for q in reqs if q["ttft_ns"] is None or q["per_token_ns"] is None or
                                   not 0 <= q["wall_ns"] - q["ttft_ns"] - q["per_token_ns"] * (q["generated_tokens"] - 1)
                                   < q["generated_tokens"] or q["ttft_ns"] > q["wall_ns"])
f["shared_requests"] = sum(1 for q in reqs if q["categories"]["shared"] > 0)
f["requests_with_others"] = sum(1 for q in reqs if q["categories"]["other_requests"] > 0)
# tokens against rollup (the same rule) and the server's answers (its own counts), request by request
by_start = sorted(reqs, key=lambda q: q["start_ns"])
f["tokens_vs_rollup"] = " ".join("%d/%d" % (q["prompt_tokens"], q["generated_tokens"]) for q in by_start) == \
    " ".join("%d/%d" % (r["prompt_tokens"], r["generated"]) for r in sorted(rollup, key=lambda r: r["start_s"]))
ours = sorted("%d:%d/%d" % (q["seq"], q["prompt_tokens"], q["generated_tokens"]) for q in reqs)
theirs = sorted("%d:%d/%d" % (a["id_slot"], a["timings"]["prompt_n"], a["timings"]["predicted_n"]) for a in answers)
f["tokens_vs_server"] = "same" if ours == theirs else "%s vs %s" % (ours, theirs)
f["gap"] = by_start[1]["start_ns"] - (by_start[0]["start_ns"] + by_start[0]["wall_ns"]) if len(reqs) == 2 else -1
for k, v in f.items(): print(k, v if reqs or k in ("requests", "rollup_requests") else "no requests")
PY
    fact() { sed -n "s/^$1 //p" "$OUT/$l.facts"; }
    expect "$l: report's requests, as many as rollup --by request's" "$(fact requests):$(fact rollup_requests)" "$n:$n"
    expect "$l: each request's categories" "$(fact category_names)" "generation graph_build host idle other_requests prompt shared"
    expect "$l: each request's categories add up to its wall, none negative" "$(fact not_adding_up)" 0
    expect "$l: each request has a wall, a prompt and a generation" "$(fact without_time)" 0
    expect "$l: the requests' own part of their batches adds up to the batches' time, each batch once" \
        "$(fact own_vs_batches)" ok
    expect "$l: TTFT, then a per-token time for each decode, make the wall" "$(fact ttft_per_token_not_wall)" 0
    expect "$l: prompt and generated tokens as rollup --by request counts them" "$(fact tokens_vs_rollup)" True
    expect "$l: prompt and generated tokens per slot as the server answered (timings.prompt_n, predicted_n)" \
        "$(fact tokens_vs_server)" same
    expect "$l: report's table lists the requests" "$(sed -n '/^=== Where the time went/,/^$/p' "$OUT/$l.report" |
        sed -n "/requests: $n, the longest time to first token first/,\$p" | grep -cE '^ +[0-9]+ +[0-9.]+ +[0-9.]+ ')" "$n"
}

# ---- one slot, two requests 2 s apart: nothing shared, the wait between them in neither
serve_two_requests "$OUT/apart.db"
expect "apart: record exits 0" "$?" 0
check_requests "$OUT/apart.db" apart 2 "$OUT/apart-1.json" "$OUT/apart-2.json"
expect "apart: neither request shared a batch" "$(sed -n 's/^shared_requests //p' "$OUT/apart.facts")" 0
expect "apart: no batch of another request inside either" "$(sed -n 's/^requests_with_others //p' "$OUT/apart.facts")" 0
expect_ge "apart: the second request begins 2 s after the first ended" "$(sed -n 's/^gap //p' "$OUT/apart.facts")" 2000000000

# ---- two slots, two requests at once: their decodes share batches
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$GGPROF" record -o "$OUT/together.db" -- "$LLAMA_BIN_DIR/llama-server" -m "$GGUF_DENSE" --host 127.0.0.1 \
    --port "$port" -np 2 -c 1024 -t 2 > "$OUT/together.log" 2>&1 &
rec=$!
for _ in $(seq 1 150); do
    curl -s "http://127.0.0.1:$port/health" 2> /dev/null | grep -q '"ok"' && break
    sleep 0.2
done
ask() { # NAME PROMPT N
    curl -s --max-time 120 -X POST "http://127.0.0.1:$port/completion" -d "{\"prompt\": \"$2\", \"n_predict\": $3,
        \"cache_prompt\": false, \"temperature\": 0, \"seed\": 1}" > "$OUT/together-$1.json"
}
ask 1 "a story about a fox who lived in a quiet forest" 12 &
a1=$!
ask 2 "once upon a time" 16 &
a2=$!
wait "$a1" "$a2"
kill -TERM "$rec"
wait "$rec"
expect "together: record exits 0" "$?" 0
expect "together: the server answered in two slots" "$(python3 -c 'import json, sys
print(sorted(json.load(open(a))["id_slot"] for a in sys.argv[1:]))' "$OUT/together-1.json" "$OUT/together-2.json")" "[0, 1]"
expect_ge "together: batches of both sequences (sqlite3)" "$(sqlite3 "$OUT/together.db" "SELECT count(*) FROM batches
    WHERE status = 0 AND n_seqs = 2")" 1
check_requests "$OUT/together.db" together 2 "$OUT/together-1.json" "$OUT/together-2.json"
expect "together: both requests shared batches" "$(sed -n 's/^shared_requests //p' "$OUT/together.facts")" 2
