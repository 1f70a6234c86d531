#!/usr/bin/env bash
# Vulkan device ops: fidelity and cost of joining dispatches to graph nodes (docs/backends.md).
#
# Fidelity: ggprof's per-op device totals from a normal `ggprof record` (no --serialize) beside ggml-vulkan's own
# GGML_VK_PERF_LOGGER=1 (which times every node and synchronises after each: a reference, not a way to run), in
# separate runs of the same model and prompt. Ops are matched by name: ggprof's fused groups (RMS_NORM+MUL) are the
# logger's fusions (RMS_NORM_MUL), its MUL_MAT_VEC is MUL_MAT. Prints a table of counts, milliseconds and shares
# of device time, and for each op over 1% of it whether the two shares are within 15% of each other.
#
# Cost: tokens/s of generation (llama_decode calls of one token, from the trace's batches) under `ggprof record`
# with node attribution and with GGPROF_DEVICE_NODES=0 (dispatches joined to splits only), RUNS runs each,
# alternating; prints each pair's ratio and the median.
#
# usage: tests/bench/vulkan_fidelity.sh [TOKENS [RUNS]]   (defaults 24, 5)
#   VULKAN_NODE_DIR: another node-llama-cpp install with its Vulkan package (default: the fixture's 3.21.1;
#   the fixture's NODE_VULKAN2_DIR is 3.22.1's). Runs on lavapipe here; on a real GPU where the device has one.
# Not while anything else runs: on 2 cores a busy machine changes every figure.
set -euo pipefail
export LC_ALL=C # join and sort agree on the order
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOKENS=${1:-24}
RUNS=${2:-5}
fixture=$(bash "$ROOT/tests/fixture.sh") || { echo "vulkan_fidelity: tests/fixture.sh failed" >&2; exit 1; }
eval "$(sed 's/^/export /' <<< "$fixture")"
GGPROF=$ROOT/build/bin/ggprof
NODE_DIR=${VULKAN_NODE_DIR:-$NODE_PROJECT_DIR}
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} # lavapipe is a CPU-type device: ggml skips it unless asked
W=$(mktemp -d /tmp/ggprof-vkfid.XXXXXX)
cp "$ROOT/samples/node/script.mjs" "$NODE_DIR/ggprof-script.mjs"
run() { (cd "$NODE_DIR" && timeout 900 "$@" node ggprof-script.mjs "$GGUF_DENSE" "$TOKENS" vulkan); }
echo "# $(basename "$NODE_DIR"), model $(basename "$GGUF_DENSE"), $TOKENS tokens; files in $W"

# ---- fidelity
GGML_VK_PERF_LOGGER=1 run > "$W/perf.out" 2> "$W/perf.err"
run "$GGPROF" record -o "$W/fid.db" > "$W/fid.out" 2> "$W/fid.err"
# The logger prints "NAME: COUNT x AVG us = TOTAL us" lines after each graph. NAME is an op with details
# ("MUL_MAT_VEC q4_0 m=64 n=1 k=64", "RMS_NORM(64,1,1,1)"), or a fusion before its first op ("RMS_NORM_MUL
# RMS_NORM(64,1,1,1)"): a second word in capitals is an op, and the first one then the fusion's name.
awk '/ x .* us = .* us/ {
        line = $0; sub(/: [0-9]+ x .*/, "", line);
        n = split(line, w, " ");
        name = w[1]; sub(/\(.*/, "", name);
        if (n > 1) { second = w[2]; sub(/\(.*/, "", second); if (second ~ /^[A-Z_]+$/) name = w[1]; }
        if (name == "MUL_MAT_VEC") name = "MUL_MAT";
        cnt = $0; sub(/.*: /, "", cnt); sub(/ x .*/, "", cnt);
        tot = $0; sub(/.* = /, "", tot); sub(/ us.*/, "", tot);
        key = name; gsub(/[_+]/, "", key);
        c[key] += cnt; t[key] += tot * 1000; label[key] = name
     }
     END { for (k in c) printf "%s|%s|%d|%.0f\n", k, label[k], c[k], t[k] }' "$W/perf.err" | sort > "$W/perf.tab"
sqlite3 -separator '|' "$W/fid.db" "SELECT replace(replace(COALESCE(extra, name), '_', ''), '+', ''),
    COALESCE(extra, name), count(*), sum(duration_ns) FROM records WHERE timing = 4 GROUP BY 1, 2 ORDER BY 1" \
    > "$W/ggprof.tab"
[ -s "$W/perf.tab" ] || { echo "vulkan_fidelity: GGML_VK_PERF_LOGGER printed nothing (see $W/perf.err)" >&2; exit 1; }
[ -s "$W/ggprof.tab" ] || { echo "vulkan_fidelity: no device OP records in $W/fid.db" >&2; exit 1; }
join -t '|' -a 1 -a 2 -e 0 -o 0,1.2,2.2,1.3,2.3,1.4,2.4 "$W/ggprof.tab" "$W/perf.tab" | awk -F'|' '
    { key[NR] = ($2 != "0") ? $2 : $3; gc[NR] = $4; pc[NR] = $5; gt[NR] = $6; pt[NR] = $7; G += $6; P += $7 }
    END {
        printf "%-24s %8s %8s %10s %10s %8s %8s %7s  %s\n", "op (ggprof / logger)", "n ggprof", "n logger",
            "ggprof ms", "logger ms", "ggprof %", "logger %", "ratio", "over 1%: within 15%?";
        for (i = 1; i <= NR; i++) {
            gs = G ? 100 * gt[i] / G : 0; ps = P ? 100 * pt[i] / P : 0;
            r = ps ? gs / ps : 0; verdict = "";
            if (gs > 1 || ps > 1) { big++; ok = (r >= 0.85 && r <= 1.15); good += ok; verdict = ok ? "yes" : "NO" }
            printf "%-24s %8d %8d %10.3f %10.3f %7.1f%% %7.1f%% %7.3f  %s\n", key[i], gc[i], pc[i], gt[i] / 1e6,
                pt[i] / 1e6, gs, ps, r, verdict
        }
        printf "device time: ggprof %.3f ms, logger %.3f ms (ratio %.3f); ops over 1%%: %d, within 15%%: %d\n",
            G / 1e6, P / 1e6, P ? G / P : 0, big, good
    }' | tee "$W/fidelity.txt"
echo "# attributed: $(sqlite3 "$W/fid.db" "SELECT printf('%.1f%% of device time, %d of %d dispatches',
    100.0 * sum(CASE WHEN node_index >= 0 THEN duration_ns ELSE 0 END) / sum(duration_ns),
    sum(node_index >= 0), count(*)) FROM kernels")"

# ---- cost
tps() { sqlite3 "$1" "SELECT printf('%.3f', sum(n_tokens) * 1e9 / sum(duration_ns)) FROM batches WHERE n_tokens = 1"; }
ratios=()
for i in $(seq 1 "$RUNS"); do
    run "$GGPROF" record -o "$W/on-$i.db" > /dev/null 2>&1
    GGPROF_DEVICE_NODES=0 run "$GGPROF" record -o "$W/off-$i.db" > /dev/null 2>&1
    on=$(tps "$W/on-$i.db") off=$(tps "$W/off-$i.db")
    [ "$(sqlite3 "$W/off-$i.db" "SELECT count(*) FROM kernels WHERE node_index >= 0")" = 0 ] ||
        { echo "vulkan_fidelity: GGPROF_DEVICE_NODES=0 still joined dispatches to nodes" >&2; exit 1; }
    r=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", b > 0 ? a / b : 0 }')
    ratios+=("$r")
    echo "run $i: attribution on $on tokens/s, off $off tokens/s, on/off $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "tokens/s with attribution / without: median %.3f (min %.3f, max %.3f, %d runs)\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
