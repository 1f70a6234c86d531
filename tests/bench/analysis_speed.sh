#!/usr/bin/env bash
# Benchmark (not a test): the analyzer on a million records, every row of docs/analysis.md's "Speed" table in one
# run, each beside its reference where one exists (run here, on the same data) and its target:
#   report on a 1M-record v3 JSON       vs Python json.load + a group-by; reading the file (cat)   <= 2 s, 512 MiB
#   top-ops on a 1M-record database     vs the sqlite3 shell's GROUP BY over the same rows           <= 0.5 s
#   rollup --by layer|block|phase|graph                                                              <= 1 s
#   diff of the trace with itself                                                                     <= 3 s
#   export --html, export --chrome                                                                    <= 5 s each
#   record's database build at exit, for a workload that recorded 1M records                         <= 5 s
# The JSON repeats the upstream profiler sample's records (its writer's layout), shifted in time; the database copies a real
# llama-completion recording's graphs (shifted in time and graph id) until it holds RECORDS records.
# Then a long run, LONG records built the same way (default 10M): every analysis command and export, its time, time
# per record and peak memory, against 256 MiB and 2 us per record.
# usage: tests/bench/analysis_speed.sh [RECORDS [LONG]]   (defaults 1000000 and 10000000; about 15 minutes here)
# Set GGPROF_BUILD to use another build folder. Run it on an idle machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-1000000}
LONG=${2:-10000000}
BUILD=${GGPROF_BUILD:-build}
make -C "$ROOT" -s BUILD="$BUILD" all
GGPROF=$ROOT/$BUILD/bin/ggprof
eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# timed LABEL CMD...: wall seconds and peak memory (MiB) of CMD, output discarded; "S M" on stdout.
timed() {
    shift
    /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" > "$tmp/out.txt" 2> "$tmp/err.txt" ||
        { echo "failed: $* ($(head -n 3 "$tmp/err.txt"))" >&2; exit 1; }
    awk '{ printf "%.2f %.0f\n", $1, $2 / 1024 }' "$tmp/time"
}
rows=()
row() { # WORK SECONDS MIB REFERENCE TARGET_S [TARGET_MIB]
    local ok
    ok=$(awk -v s="$2" -v m="$3" -v ts="$5" -v tm="${6:-0}" 'BEGIN { print (s <= ts && (tm == 0 || m <= tm)) ? "met" : "NOT met" }')
    rows+=("$(printf '| %s | %s s, %s MiB | %s | <= %s s%s: %s |' "$1" "$2" "$3" "$4" "$5" "${6:+, $6 MiB}" "$ok")")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }

# ---- the JSON: N records in the upstream profiler writer's layout
node -e '
    const fs = require("fs");
    const [src, dst, n] = [process.argv[1], process.argv[2], Number(process.argv[3])];
    const lines = fs.readFileSync(src, "utf8").split("\n");
    const recs = lines.filter(l => l.startsWith("    {\"type\"")).map(l => l.replace(/,$/, ""));
    const head = lines.slice(0, lines.indexOf("  \"records\": [") + 1).join("\n")
        .replace(/"total_records": \d+/, "\"total_records\": " + n);
    const fd = fs.openSync(dst, "w");
    fs.writeSync(fd, head + "\n");
    let buf = [];
    for (let i = 0; i < n; i++) {
        const shift = Math.floor(i / recs.length) * 1e9;
        buf.push(recs[i % recs.length].replace(/"start_ns": (\d+)/, (m, v) => "\"start_ns\": " + (Number(v) + shift)) +
                 (i + 1 < n ? "," : ""));
        if (buf.length === 10000) { fs.writeSync(fd, buf.join("\n") + "\n"); buf = []; }
    }
    if (buf.length) fs.writeSync(fd, buf.join("\n") + "\n");
    fs.writeSync(fd, "  ]\n}\n");
    fs.closeSync(fd);' "$ROOT/samples/traces/upstream-v3.json" "$tmp/big.json" "$N"
mb=$(awk -v s="$(stat -c %s "$tmp/big.json")" 'BEGIN { printf "%.0f", s / 1e6 }')
cat "$tmp/big.json" > /dev/null # into the page cache for every reader alike
read -r cat_s _ < <(timed cat cat "$tmp/big.json")
read -r py_s py_m < <(timed python python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = {}
for r in d["records"]:
    k = (r["type"], r["backend_id"], r["name"])
    t = g.setdefault(k, [0, 0])
    t[0] += 1
    t[1] += r["duration_ns"]
print(len(g))' "$tmp/big.json")
read -r s m < <(timed report "$GGPROF" report "$tmp/big.json")
grep -q "($N records" "$tmp/out.txt" || { echo "report did not count $N records" >&2; exit 1; }
row "report on a $N-record v3 JSON ($mb MB)" "$s" "$m" \
    "json.load + group-by: $py_s s, $py_m MiB ($(ratio "$py_s" "$s")x); cat: $cat_s s" 2 512
rm -f "$tmp/big.json"

# ---- the database: a real recording's graphs, copied until it holds N records (tests/bench/big_db.sh)
db=$tmp/big.db
bash "$ROOT/tests/bench/big_db.sh" "$GGPROF" "$db" "$N"
q() { "$GGPROF" query "$db" "$1"; }
records=$(q "SELECT count(*) FROM events")
per_token=$(q "SELECT count(*) / count(DISTINCT graph_id) FROM events")
cat "$db" > /dev/null
read -r sq_s _ < <(timed sqlite3 sqlite3 "$db" "SELECT name, backend_id, count(*), sum(duration_ns), min(duration_ns),
    max(duration_ns) FROM events WHERE type = 0 GROUP BY pid, sched_id, backend_id, node_id, name")
read -r s m < <(timed top-ops "$GGPROF" top-ops "$db")
row "top-ops on a $records-record database" "$s" "$m" "sqlite3 GROUP BY: $sq_s s ($(ratio "$sq_s" "$s")x)" 0.5
for by in layer block phase graph; do
    read -r s m < <(timed rollup "$GGPROF" rollup "$db" --by "$by")
    row "rollup --by $by" "$s" "$m" "" 1
done
read -r s m < <(timed diff "$GGPROF" diff "$db" "$db")
row "diff of the trace with itself" "$s" "$m" "" 3
read -r s m < <(timed html "$GGPROF" export "$db" --html "$tmp/t.html")
row "export --html" "$s" "$m" "" 5
read -r s m < <(timed chrome "$GGPROF" export "$db" --chrome "$tmp/t.json")
row "export --chrome" "$s" "$m" "" 5
rm -f "$tmp/t.html" "$tmp/t.json" "$db"

# ---- a long run: LONG records (default 10M; 0 skips it), every analysis command and export within 256 MiB and
# 2 us per record read (diff reads the trace twice: per record of both)
long_rows=()
if [ "$LONG" -gt 0 ]; then
    bash "$ROOT/tests/bench/big_db.sh" "$GGPROF" "$db" "$LONG"
    lrec=$(q "SELECT count(*) FROM events")
    cat "$db" > /dev/null
    long() { # LABEL READS CMD...: one row of the long run's table
        local label=$1 reads=$2
        shift 2
        read -r s m < <(timed "$label" "$@")
        long_rows+=("$(awk -v l="$label" -v s="$s" -v m="$m" -v n="$((lrec * reads))" 'BEGIN { us = s * 1e6 / n
            printf "| %s | %.2f s | %.2f | %d MiB | %s |", l, s, us, m, (m <= 256 && us <= 2) ? "met" : "NOT met" }')")
    }
    long report 1 "$GGPROF" report "$db"
    long top-ops 1 "$GGPROF" top-ops "$db"
    long top-kernels 1 "$GGPROF" top-kernels "$db"
    long inefficiency 1 "$GGPROF" inefficiency "$db"
    for by in layer block phase graph request; do long "rollup --by $by" 1 "$GGPROF" rollup "$db" --by "$by"; done
    long "diff (with itself)" 2 "$GGPROF" diff "$db" "$db"
    long "export --html" 1 "$GGPROF" export "$db" --html "$tmp/t.html"
    long "export --chrome" 1 "$GGPROF" export "$db" --chrome "$tmp/t.json"
    long "export --json" 1 "$GGPROF" export "$db" --json "$tmp/t.json.gz"
    long "export --otlp" 1 "$GGPROF" export "$db" --otlp "$tmp/t.jsonl"
    long "export --test-file (replay's cases)" 1 "$GGPROF" export "$db" --test-file "$tmp/t.txt"
    rm -f "$tmp"/t.* "$db"
fi

# ---- record's database build: the time from the workload's end to record's, for about N records
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$tmp/soak_workload" "$ROOT/tests/bench/soak_workload.c" \
    -I"$LLAMA_SRC_DIR/include" -I"$LLAMA_SRC_DIR/ggml/include" -L"$LLAMA_BIN_DIR" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$LLAMA_BIN_DIR"
"$tmp/soak_workload" "$GGUF_DENSE" 2 0 > "$tmp/rate.txt" # tokens in 2 s, unrecorded
secs=$(awk -v n="$N" -v p="$per_token" -v t="$(awk '{ print $2 }' "$tmp/rate.txt")" 'BEGIN { printf "%d", n / p / (t / 2) + 1 }')
t0=$(date +%s.%N)
"$GGPROF" record -q -o "$tmp/rec.db" -- sh -c '"$0" "$1" "$2" 0 > /dev/null; date +%s.%N > "$3"' \
    "$tmp/soak_workload" "$GGUF_DENSE" "$secs" "$tmp/end" > /dev/null 2>&1
t1=$(date +%s.%N)
got=$("$GGPROF" query "$tmp/rec.db" "SELECT count(*) FROM events")
build=$(awk -v a="$(cat "$tmp/end")" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
row "record's database build at exit ($got records, with the JSON)" "$build" "-" "" 5

echo "| work | ggprof | reference | target |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
if [ ${#long_rows[@]} -gt 0 ]; then
    echo
    echo "| on $lrec records | time | us/record | peak memory | <= 256 MiB and 2 us/record |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${long_rows[@]}"
fi
