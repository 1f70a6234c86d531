# Helpers for the end-to-end tests (sourced). Tests assert on structure and invariants, never on durations.
set -u
: "${GGPROF:?run through tests/run.sh}"
T=${GGPROF_TEST_NAME:-$(basename "$0" .sh)} # a test run again on another build names itself
OUT="$GGPROF_TEST_OUT/$T"
mkdir -p "$OUT"

ok() { echo "ok - $T: $1"; }
not_ok() { echo "not ok - $T: $1: $2"; }

# expect NAME ACTUAL EXPECTED
expect() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', expected '$3'"; fi
}

# spinners_start N [CPUS]: N CPU-bound shells (pinned to CPUS with taskset when given), their pids in SPINNERS;
# spinners_stop ends them
spinners_start() {
    SPINNERS=()
    local i
    for ((i = 0; i < $1; i++)); do
        if [ -n "${2:-}" ]; then taskset -c "$2" sh -c 'while :; do :; done' & else sh -c 'while :; do :; done' & fi
        SPINNERS+=($!)
    done
}
spinners_stop() {
    kill "${SPINNERS[@]}" 2> /dev/null
    wait "${SPINNERS[@]}" 2> /dev/null
}

# expect_ge NAME ACTUAL MIN (integers)
expect_ge() {
    if [ -n "$2" ] && [ "$2" -ge "$3" ] 2>/dev/null; then ok "$1"; else not_ok "$1" "got '$2', expected >= $3"; fi
}

q() { "$GGPROF" query "$@"; }

# record finishes every trace before it exits (--wait): the tests read its lines and its files at once. A trace
# finished in the background (what record does when the end has more than about a second to store) is
# e2e/finish_deferred.sh's, which unsets it.
export GGPROF_RECORD_WAIT=${GGPROF_RECORD_WAIT:-1}

# What a test preloads by hand (GGML_PROFILE without the collector): libggprof.so, and in a sanitized build (make
# test SAN=...) the sanitizer's runtime ahead of it, with leak checking off in the profiled program (its leaks and
# ggml's are not ggprof's). Use as: LD_PRELOAD=$GGPROF_PRELOAD ASAN_OPTIONS=$WORKLOAD_ASAN CMD...
GGPROF_LIB="$(cd "$(dirname "$GGPROF")/../lib" && pwd)/libggprof.so"
GGPROF_PRELOAD=$GGPROF_LIB
WORKLOAD_ASAN=${ASAN_OPTIONS:-}
if [ -n "${GGPROF_SAN_RT:-}" ]; then
    GGPROF_PRELOAD="$GGPROF_SAN_RT:$GGPROF_LIB"
    WORKLOAD_ASAN="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi

# record_completion MODEL DB [BIN_DIR]: llama-completion recorded as the CPU tests record it, on the dense or the
# MoE model (a fixed prompt, 12 tokens, 2 threads, no warm-up, seed 1); its output in DB's .log. Returns record's
# status (llama-completion's).
record_completion() {
    local gguf=$GGUF_DENSE
    [ "$1" = moe ] && gguf=$GGUF_MOE
    "$GGPROF" record -o "$2" -- "${3:-$LLAMA_BIN_DIR}/llama-completion" -m "$gguf" -p "The quick brown fox" -n 12 \
        -t 2 --no-warmup -no-cnv -s 1 > "${2%.db}.log" 2>&1
}

# The structural invariants of a CPU trace (see docs/trace-database.md).
check_cpu_trace() { # DB LABEL
    local db=$1 l=$2
    expect_ge "$l: CPU splits recorded" "$(q "$db" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid
        AND b.sched_id = s.sched_id AND b.id = s.backend_id WHERE b.device_type = 0")" 1
    expect "$l: every CPU split has its ticks matched" "$(q "$db" "SELECT count(*) FROM splits s JOIN backends b
        ON b.pid = s.pid AND b.sched_id = s.sched_id AND b.id = s.backend_id
        WHERE b.device_type = 0 AND (s.ticks_matched IS NOT 1 OR s.n_ticks != s.n_expected)")" 0
    expect "$l: one OP record per computed node (ggml's tick count)" "$(q "$db" "SELECT count(*) FROM splits s
        WHERE s.ticks_matched = 1 AND s.n_ticks != (SELECT count(*) FROM events e WHERE e.pid = s.pid
        AND e.graph_id = s.graph_id AND e.split_id = s.split_id AND e.type = 0)")" 0
    expect "$l: OP node indices lie in their split" "$(q "$db" "SELECT count(*) FROM events e JOIN split_list s
        ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id WHERE e.type = 0
        AND (e.node_index < s.node_start OR e.node_index >= s.node_start + s.n_nodes)")" 0
    expect "$l: no node timed twice in a graph" "$(q "$db" "SELECT count(*) FROM (SELECT pid, graph_id, node_index
        FROM events WHERE type = 0 GROUP BY 1, 2, 3 HAVING count(*) > 1)")" 0
    expect "$l: OP+SYNC cover >= 99% of each CPU split" "$(q "$db" "SELECT count(*) FROM splits s
        WHERE s.ticks_matched = 1 AND (SELECT COALESCE(sum(duration_ns), 0) FROM events e WHERE e.pid = s.pid
        AND e.graph_id = s.graph_id AND e.split_id = s.split_id AND e.type IN (0, 2)) < 0.99 * s.duration_ns")" 0
    expect "$l: records lie inside their split" "$(q "$db" "SELECT count(*) FROM events e JOIN split_list s
        ON s.pid = e.pid AND s.graph_id = e.graph_id AND s.split_id = e.split_id WHERE e.type IN (0, 2)
        AND (e.start_ns < s.start_ns OR e.start_ns + e.duration_ns > s.start_ns + s.duration_ns)")" 0
    expect "$l: OP tensor names and shapes filled" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0
        AND (tensor_name IS NULL OR json_extract(ne, '\$[0]') <= 0 OR n_src = 0)")" 0
    expect "$l: OP bytes are the output tensor's size" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0
        AND bytes != out_bytes")" 0
}

# Every record line of the .json.gz parses on its own, the whole file parses, and counts agree with the db.
check_json() { # JSON_GZ DB LABEL
    local n
    n=$(gzip -dc "$1" | node -e '
        const lines = require("fs").readFileSync(0, "utf8").split("\n");
        const doc = JSON.parse(lines.join("\n"));
        let inRecords = false, n = 0;
        for (const line of lines) {
            if (line.startsWith("  \"records\": [")) { inRecords = true; continue; }
            if (inRecords && line.startsWith("    {")) { JSON.parse(line.replace(/,$/, "")); n++; }
        }
        if (doc.version !== 3 || doc.records.length !== n || doc.total_records !== n) throw new Error("count");
        console.log(n);' 2>&1)
    expect "$3: every JSON record line parses, counts agree" "$n" "$(q "$2" "SELECT count(*) FROM events")"
}
# serve_two_requests DB [RECORD_OPTION...]: records a llama-server on the dense model (one slot, 2 threads) while it
# answers two short completions 2 s apart (its decoding thread waits between them), then stops it; the server's
# log in DB's .log, its two answers (JSON, with its `timings`) in DB's -1.json and -2.json; returns record's exit
# status.
serve_two_requests() {
    local db=$1 port rec
    shift
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$GGPROF" record "$@" -o "$db" -- "$LLAMA_BIN_DIR/llama-server" -m "$GGUF_DENSE" --host 127.0.0.1 --port "$port" \
        -np 1 -c 512 -t 2 > "${db%.db}.log" 2>&1 &
    rec=$!
    for _ in $(seq 1 150); do
        curl -s "http://127.0.0.1:$port/health" 2> /dev/null | grep -q '"ok"' && break
        sleep 0.2
    done
    local prompt i=0
    for prompt in "the first request" "the second request, two seconds later"; do
        i=$((i + 1))
        curl -s --max-time 120 -X POST "http://127.0.0.1:$port/completion" -d "{\"prompt\": \"$prompt\", \"n_predict\": 4,
            \"cache_prompt\": false, \"temperature\": 0, \"seed\": 1}" > "${db%.db}-$i.json"
        [ "$i" = 1 ] && sleep 2
    done
    kill -TERM "$rec"
    wait "$rec"
}


# Builds one of the tests' C programs (tests/e2e/NAME.c, or SOURCE) against the fixture's ggml, into $OUT/NAME.
build_ggml_program() { # NAME [SOURCE]
    cc -std=c11 -O1 -Wall -Wextra -Werror -o "$OUT/$1" "${2:-$GGPROF_ROOT/tests/e2e/$1.c}" \
        -I"$LLAMA_SRC_DIR/ggml/include" -L"$LLAMA_BIN_DIR" -lggml-cpu -lggml -lggml-base \
        -Wl,-rpath,"$LLAMA_BIN_DIR" 2> "$OUT/cc.log"
    expect "the program builds against ggml" "$?" 0
}

# The whole run's accounting (docs/findings.md, "Accounting"), used by e2e/whole_run.sh and compat/matrix.sh.
# acc DB KEY...: report --format json's accounting of DB's one ggml process, the values at the dotted KEYs (a
# category's own dots kept: categories.compute.CPU), None where there is none; the JSON kept in DB.json for whole.
acc() {
    local db=$1
    shift
    "$GGPROF" report "$db" --format json > "$db.json" 2> "$db.err" || { echo "report failed: $(cat "$db.err")"; return; }
    python3 - "$db.json" "$@" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))["accounting"]
p = max(d, key=lambda p: p["wall_ns"])
out = []
for k in sys.argv[2:]:
    v, parts = p, k.split(".")
    while parts and isinstance(v, dict):  # the longest key first: "categories.compute.CPU" is one category
        n = next((n for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in v), 1)
        v, parts = v.get(".".join(parts[:n])), parts[n:]
    out.append(str(v if not parts else None))
print(" ".join(out))
PY
}

# whole DB LABEL: after acc, the categories add up to wall_ns, which is record's fork to exit within 1%.
whole() {
    local db=$1 l=$2 sum wall fe
    read -r sum wall <<< "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["accounting"]
p=max(d, key=lambda p: p["wall_ns"]); print(sum(p["categories"].values()), p["wall_ns"])' "$db.json" 2> /dev/null)"
    fe=$(sqlite3 "$db" "SELECT exit_ns - fork_ns FROM processes_time WHERE how = 'wait4'")
    expect "$l: the categories add up to the wall time exactly" "$sum" "$wall"
    expect_ge "$l: fork to exit measured by record" "$fe" 1
    expect "$l: the wall is record's fork to exit within 1%" "$(python3 -c 'import sys; w, f = int(sys.argv[1]), int(sys.argv[2])
print("yes" if abs(w - f) <= f / 100 else "no: %d vs %d" % (w, f))' "${wall:-0}" "${fe:-1}")" yes
    expect "$l: every category >= 0" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["accounting"]
print(sum(1 for p in d for v in p["categories"].values() if v < 0))' "$db.json")" 0
}

# The buffer sizes llama.cpp printed (model, KV, compute and output buffers, after its last model load: v0.4.0 first
# sizes them in a fitting pass) against what `ggprof memory` says each backend held at the peak, per buffer type and
# kind, to the 0.01 MiB llama.cpp prints. LABEL: "...: N buffers as llama.cpp printed them".
check_memory_vs_log() { # DB LOG LABEL [MIN_BUFFERS]
    local db=$1 log=$2 l=$3
    awk '/load_tensors: loading model tensors/ { n = split("", m) }
         / MiB$/ && /buffer size =/ && !/~llama_context/ {
             k = /model buffer/ ? "weights" : / KV buffer/ ? "kv" : /compute buffer/ ? "compute" : /output buffer/ ? "other" : ""
             if (k != "" && $(NF - 1) + 0 > 0) m[$(NF - 6) "|" k] = sprintf("%.2f", $(NF - 1))
         }
         END { for (x in m) print x "|" m[x] }' "$log" | sort > "$db.log-sizes"
    "$GGPROF" memory "$db" --format csv | awk -F, 'NR > 1 {
             split("weights kv compute other", kinds, " ")
             for (i = 1; i <= 4; i++) if ($(9 + i) > 0) printf "%s|%s|%.2f\n", $2, kinds[i], $(9 + i) / 1048576
         }' | sort > "$db.ggprof-sizes"
    expect_ge "$l: buffers llama.cpp printed" "$(wc -l < "$db.log-sizes")" "${4:-3}"
    expect "$l: per buffer type and kind, as llama.cpp printed them" "$(diff "$db.log-sizes" "$db.ggprof-sizes" | tr '\n' ' ')" ""
}
