#!/usr/bin/env bash
# Vulkan device ops: fidelity and cost of joining dispatches to graph nodes (docs/backends.md).
#
# Fidelity: ggprof's per-op device totals from a normal `ggprof record` (no --serialize) beside ggml-vulkan's own
# GGML_VK_PERF_LOGGER=1 (which times every node and synchronises after each: a reference, not a way to run), in
# separate runs of the same model and prompt. Ops are matched by name: ggprof's fused groups (RMS_NORM+MUL) are the
# logger's fusions (RMS_NORM_MUL), its MUL_MAT_VEC is MUL_MAT. Prints a table of counts, milliseconds and shares
# of device time, and for each op over 1% of the logger's (the reference's) device time whether the two shares are
# within 15% of each other.
#
# Cost: tokens/s of generation (from the first one-token llama_decode to the last, from the trace's batches:
# llama_decode returns before the device is done, the next one starts after the logits were read) under
# `ggprof record`
# with node attribution and with GGPROF_DEVICE_NODES=0 (dispatches joined to splits only), RUNS runs each,
# alternating; prints each pair's ratio and the median.
#
# usage: tests/bench/vulkan_fidelity.sh [TOKENS [RUNS]]   (defaults 24, 5; FID_RUNS=3 runs of each side for the
#   fidelity table)
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
# The logger prints "NAME: COUNT x AVG us = TOTAL us" lines after each graph. NAME is an op with details
# ("MUL_MAT_VEC q4_0 m=64 n=1 k=64", "RMS_NORM(64,1,1,1)"), or a fusion before its first op ("RMS_NORM_MUL
# RMS_NORM(64,1,1,1)"): a second word in capitals is an op, and the first one then the fusion's name.
# One table per run: KEY|LABEL|COUNT|NS, KEY the label without '_' and '+' (RMS_NORM+MUL and RMS_NORM_MUL meet).
perf_table() {
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
         END { for (k in c) printf "%s|%s|%d|%.0f\n", k, label[k], c[k], t[k] }' "$1"
}
ggprof_table() {
    sqlite3 -separator '|' "$1" "SELECT replace(replace(COALESCE(extra, name), '_', ''), '+', ''),
        COALESCE(extra, name), count(*), sum(duration_ns) FROM records WHERE timing = 4 GROUP BY 1, 2"
}
# Separate runs, alternating, FID_RUNS of each (default 3): on lavapipe the "device" is the host's own cores,
# and one run's shares move by a few percent; each op's median total over the runs is compared.
for i in $(seq 1 "${FID_RUNS:-3}"); do
    GGML_VK_PERF_LOGGER=1 run > "$W/perf-$i.out" 2> "$W/perf-$i.err"
    perf_table "$W/perf-$i.err" | sed 's/^/logger|/' > "$W/perf-$i.tab"
    run "$GGPROF" record -o "$W/fid-$i.db" > "$W/fid-$i.out" 2> "$W/fid-$i.err"
    ggprof_table "$W/fid-$i.db" | sed 's/^/ggprof|/' > "$W/ggprof-$i.tab"
    [ -s "$W/perf-$i.tab" ] || { echo "vulkan_fidelity: GGML_VK_PERF_LOGGER printed nothing ($W/perf-$i.err)" >&2; exit 1; }
    [ -s "$W/ggprof-$i.tab" ] || { echo "vulkan_fidelity: no device OP records in $W/fid-$i.db" >&2; exit 1; }
done
cat "$W"/perf-*.tab "$W"/ggprof-*.tab | awk -F'|' '
    function median(list,   a, n, i, j, x) {
        n = split(list, a, " ");
        for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : 0
    }
    { side = $1; k = $2; keys[k] = 1; if (side == "ggprof" || !(k in label)) label[k] = $3;
      t[side, k] = t[side, k] " " $5; c[side, k] = $4 }
    END {
        for (k in keys) { g[k] = median(t["ggprof", k]); p[k] = median(t["logger", k]); G += g[k]; P += p[k] }
        printf "%-24s %8s %8s %10s %10s %8s %8s %7s  %s\n", "op", "n ggprof", "n logger", "ggprof ms", "logger ms",
            "ggprof %", "logger %", "ratio", "over 1% (logger): within 15%?";
        n = 0; for (k in keys) order[++n] = k;
        for (i = 2; i <= n; i++) { x = order[i]; for (j = i - 1; j >= 1 && g[order[j]] < g[x]; j--) order[j + 1] = order[j]; order[j + 1] = x }
        for (i = 1; i <= n; i++) {
            k = order[i]; gs = G ? 100 * g[k] / G : 0; ps = P ? 100 * p[k] / P : 0;
            r = ps ? gs / ps : 0; verdict = "";
            if (ps > 1) { big++; ok = (r >= 0.85 && r <= 1.15); good += ok; verdict = ok ? "yes" : "NO" }
            printf "%-24s %8d %8d %10.3f %10.3f %7.1f%% %7.1f%% %7.3f  %s\n", label[k], c["ggprof", k],
                c["logger", k], g[k] / 1e6, p[k] / 1e6, gs, ps, r, verdict
        }
        printf "device time (medians): ggprof %.3f ms, logger %.3f ms (ratio %.3f); ops over 1%%: %d, within 15%%: %d\n",
            G / 1e6, P / 1e6, P ? G / P : 0, big, good
    }' | tee "$W/fidelity.txt"
echo "# attributed (last run): $(sqlite3 "$W/fid-${FID_RUNS:-3}.db" "SELECT printf('%.1f%% of device time, %d of %d dispatches',
    100.0 * sum(CASE WHEN node_index >= 0 THEN duration_ns ELSE 0 END) / sum(duration_ns),
    sum(node_index >= 0), count(*)) FROM kernels")"

# ---- cost
tps() { sqlite3 "$1" "SELECT printf('%.3f', (count(*) - 1) * 1e9 / (max(start_ns) - min(start_ns))) FROM batches
    WHERE n_tokens = 1"; }
ratios=()
for i in $(seq 1 "$RUNS"); do
    run "$GGPROF" record -o "$W/on-$i.db" > /dev/null 2>&1
    GGPROF_DEVICE_NODES=0 run "$GGPROF" record -o "$W/off-$i.db" > /dev/null 2>&1
    on=$(tps "$W/on-$i.db") off=$(tps "$W/off-$i.db")
    [ "$(sqlite3 "$W/off-$i.db" "SELECT count(*) FROM kernels WHERE node_index >= 0")" = 0 ] ||
        { echo "vulkan_fidelity: GGPROF_DEVICE_NODES=0 still joined dispatches to nodes" >&2; exit 1; }
    r=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
    ratios+=("$r")
    echo "run $i: attribution on $on tokens/s, off $off tokens/s, on/off $r"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "tokens/s with attribution / without: median %.3f (min %.3f, max %.3f, %d runs)\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
