#!/usr/bin/env bash
# Benchmark (not a test): each rule's time at stake against what its advice realizes, on the scenarios issue 40
# names, all on the fixture (2 CPUs): the rule's at_stake_ns from the recorded trace, then `ggprof try` (alternating
# pairs, docs/try.md) for the saving its change realizes, with the interval and the verdict, and their ratio (the
# target: within 50% where the advice helps, i.e. a ratio of 0.5-1.5 on a confirmed trial).
#   oversubscribed   llama-completion -t 4 on 2 CPUs (taskset): threads_oversubscribed, -t 2
#   ubatch_blas      a 48-token prompt at -ub 4 on the OpenBLAS build: small_ubatch (-ub 31: BLAS kept out)
#   ubatch_cpu       the same on the static build, which has no BLAS: small_ubatch (-ub 512)
#   offload          -ngl 2 of 4 layers on an RPC server on this machine: fallback and copies (-ngl 99)
#   contention       -t 2 beside two CPU-bound processes: cpu_contention, whose advice (free the cores) is no change
#                    of options; `try` cannot apply it, so this script alternates runs with and without the two
#                    processes and takes the compute's difference as the realized saving
# usage: [PAIRS=N] tests/bench/try_accuracy.sh [SCENARIO...]     (run it on an idle machine; about 10 minutes)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
make -C "$ROOT" -s all || exit 1
GGPROF=$ROOT/build/bin/ggprof
PAIRS=${PAIRS:-8}
[ -n "${LLAMA_BIN_DIR:-}" ] && [ -n "${GGUF_DENSE:-}" ] || eval "$(bash "$ROOT/tests/fixture.sh" | sed 's/^/export /')"
tmp=$(mktemp -d)
rpc_pid=
cleanup() {
    [ -n "$rpc_pid" ] && kill "$rpc_pid" 2> /dev/null
    jobs -p | xargs -r kill 2> /dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(oversubscribed ubatch_blas ubatch_cpu offload contention)
P="The quick brown fox jumps over the lazy dog."
PROMPT48="$P $(seq -s ' ' 1 15)"
TS="taskset -c 0,1"
$TS true 2> /dev/null || TS=

record() { # DB BIN_DIR ARGS...: llama-completion under record on CPUs 0-1, its output in DB's .log
    local db=$1 bin=$2
    shift 2
    $TS "$GGPROF" record -q -o "$db" -- "$bin/llama-completion" -m "$GGUF_DENSE" --no-warmup -no-cnv -s 1 "$@" \
        > "${db%.db}.log" 2>&1
}
# row SCENARIO TRY_JSON: a line per trial: rule, change, pairs, at stake, realized [interval], verdict, ratio
row() {
    python3 - "$@" << 'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except Exception as e:
    print("%-15s try gave no JSON (%s)" % (name, e)); sys.exit(0)
for t in d["trials"]:
    ch = " ".join("%s %s" % kv for kv in t["change"].items())
    if "realized_ns" not in t:
        print("%-15s %-22s %-12s failed: %s" % (name, t["rule"], ch, t.get("error", "?"))); continue
    r, s = t["realized_ns"], t["at_stake_ns"]
    ratio = "%.2f" % (s / r) if r > 0 else "-"
    print("%-15s %-22s %-12s %5d %9.1f %9.1f %9.1f %9.1f %-12s %6s" % (name, t["rule"], ch, t["pairs"], s / 1e6,
          r / 1e6, t["realized_low_ns"] / 1e6, t["realized_high_ns"] / 1e6, t["verdict"], ratio))
EOF
}
try_row() { # SCENARIO DB RULE...: try the rules' changes on DB, a row each
    local name=$1 db=$2 args=()
    shift 2
    for r in "$@"; do args+=(--rule "$r"); done
    $TS "$GGPROF" try "$db" "${args[@]}" --yes --pairs "$PAIRS" --format json > "$tmp/$name.json" 2> "$tmp/$name.err" ||
        sed 's/^/  /' "$tmp/$name.err" | tail -3
    row "$name" "$tmp/$name.json"
}
compute_ns() { # DB: the compute categories of its accounting, summed, and cpu_contention's at stake (0 if silent)
    "$GGPROF" report "$1" --format json 2> /dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); c=sum(v for a in d["accounting"] for k, v in a["categories"].items() if k.startswith("compute."))
s=next((f["at_stake_ns"] for f in d["findings"] if f["rule"] == "cpu_contention"), 0); print(c, s)'
}

echo "each rule's time at stake against what its advice realized (try, at most $PAIRS pairs; ms of the part the rule names)"
printf '%-15s %-22s %-12s %5s %9s %9s %9s %9s %-12s %6s\n' scenario rule change pairs at_stake realized low high verdict ratio
for s in "${scenarios[@]}"; do
    case $s in
    oversubscribed)
        record "$tmp/$s.db" "$LLAMA_BIN_DIR" -p "$P" -n 64 -t 4 && try_row "$s" "$tmp/$s.db" threads_oversubscribed ;;
    ubatch_blas)
        record "$tmp/$s.db" "$LLAMA_BIN_DIR" -p "$PROMPT48" -n 4 -t 2 -ub 4 -b 512 && try_row "$s" "$tmp/$s.db" small_ubatch ;;
    ubatch_cpu)
        record "$tmp/$s.db" "$STATIC_BIN_DIR" -p "$PROMPT48" -n 4 -t 2 -ub 4 -b 512 && try_row "$s" "$tmp/$s.db" small_ubatch ;;
    offload)
        port=$((20000 + RANDOM % 20000))
        "$LLAMA_BIN_DIR/ggml-rpc-server" -d CPU -p "$port" > "$tmp/rpc-server.log" 2>&1 &
        rpc_pid=$!
        for _ in $(seq 100); do (: > "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break; sleep 0.1; done
        record "$tmp/$s.db" "$LLAMA_BIN_DIR" -p "$P" -n 16 -t 2 --rpc "127.0.0.1:$port" -ngl 2 &&
            try_row "$s" "$tmp/$s.db" fallback copies
        kill "$rpc_pid" 2> /dev/null
        wait "$rpc_pid" 2> /dev/null
        rpc_pid= ;;
    contention)
        busy=() idle=() stake=()
        for i in $(seq "$PAIRS"); do
            for side in $((i % 2)) $(((i + 1) % 2)); do # alternate which goes first
                if [ "$side" = 1 ]; then
                    hogs=()
                    for _ in 1 2; do $TS sh -c 'while :; do :; done' & hogs+=($!); done
                    record "$tmp/busy.db" "$LLAMA_BIN_DIR" -p "$P" -n 64 -t 2
                    kill "${hogs[@]}" 2> /dev/null
                    wait "${hogs[@]}" 2> /dev/null
                    read -r c k < <(compute_ns "$tmp/busy.db")
                    busy+=("$c") stake+=("$k")
                else
                    record "$tmp/idle.db" "$LLAMA_BIN_DIR" -p "$P" -n 64 -t 2
                    read -r c _ < <(compute_ns "$tmp/idle.db")
                    idle+=("$c")
                fi
            done
        done
        python3 - "$s" "${busy[*]}" "${idle[*]}" "${stake[*]}" << 'EOF'
import statistics as st, sys
name, b, i, k = sys.argv[1], *[list(map(float, a.split())) for a in sys.argv[2:]]
d = [x - y for x, y in zip(b, i)]
T = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]
m = st.mean(d); n = len(d)  # the mean difference's 95% interval, Student's t as try's
h = (T[n - 2] if n - 2 < len(T) else 1.96) * st.stdev(d) / n ** 0.5 if n > 1 else float("inf")
s = st.median(k)
v = "confirmed" if m - h > 0 else "refuted" if m + h < 0 else "inconclusive"
print("%-15s %-22s %-12s %5d %9.1f %9.1f %9.1f %9.1f %-12s %6s" % (name, "cpu_contention", "(free cores)", len(d),
      s / 1e6, m / 1e6, (m - h) / 1e6, (m + h) / 1e6, v, "%.2f" % (s / m) if m > 0 else "-"))
EOF
        ;;
    *) echo "unknown scenario '$s' (oversubscribed ubatch_blas ubatch_cpu offload contention)" >&2; exit 2 ;;
    esac
done
