# ggml's distributed backend: llama-completion with --rpc against two ggml-rpc-server processes, each profiled
# too; split and copy records on the client, graphs on the servers, one timeline with `ggprof merge`.
. "$(dirname "$0")/../lib.sh"

p1=$((50200 + RANDOM % 500)); p2=$((p1 + 1))
for p in $p1 $p2; do
    "$GGPROF" record -q -o "$OUT/server-$p.db" -- "$LLAMA_BIN_DIR/ggml-rpc-server" -p "$p" -t 1 -d CPU \
        > "$OUT/server-$p.log" 2>&1 &
done
for _ in $(seq 1 100); do
    grep -q endpoint "$OUT/server-$p1.log" 2> /dev/null && grep -q endpoint "$OUT/server-$p2.log" 2> /dev/null && break
    sleep 0.1
done
# each prints its endpoint before it listens: wait until both accept (seconds on a loaded machine)
for p in $p1 $p2; do
    for _ in $(seq 300); do (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null && break; sleep 0.1; done
done
timeout 120 "$GGPROF" record -o "$OUT/client.db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello world" \
    -n 6 -t 2 --no-warmup -no-cnv --rpc "127.0.0.1:$p1,127.0.0.1:$p2" -ngl 99 -v > "$OUT/client.log" 2>&1
expect "the client runs to the end" "$?" 0
pkill -TERM -f "bin/ggml-rpc-server -p ($p1|$p2) "
wait
c="$OUT/client.db"
# memory: the buffers on each RPC device as the client sees them, as llama.cpp printed them
check_memory_vs_log "$c" "$OUT/client.log" "client: memory"
expect "client: memory: model, KV and compute buffers on both RPC devices" \
    "$(q "$c" "SELECT count(DISTINCT name) FROM buffers WHERE name LIKE 'RPC%' AND kind IN ('weights', 'kv', 'compute') AND size > 0")" 2
rpc_splits() { q "$c" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid AND b.sched_id = s.sched_id
    AND b.id = s.backend_id WHERE b.name LIKE 'RPC%:$1]'"; }
for p in $p1 $p2; do
    expect_ge "client: splits on the RPC backend of port $p" "$(rpc_splits $p)" 6
    expect "server $p: one graph compute per client split" "$(q "$OUT/server-$p.db" "SELECT count(*) FROM graphs")" \
        "$(rpc_splits $p)"
    check_cpu_trace "$OUT/server-$p.db" "server $p"
done
expect_ge "client: host-to-device copies into the RPC backends" "$(q "$c" "SELECT count(*) FROM records WHERE name = 'copy_H2D'")" 6
expect_ge "client: device-to-device copies between the two servers" "$(q "$c" "SELECT count(*) FROM records WHERE name = 'copy_D2D'")" 1
expect "copy bytes equal the copied tensor's bytes" "$(q "$c" "SELECT count(*) FROM events e JOIN nodes n
    ON n.pid = e.pid AND n.node_id = e.node_id WHERE e.type = 1 AND e.bytes != n.nbytes")" 0
expect_ge "client: waits on the RPC backends recorded" "$(q "$c" "SELECT count(*) FROM records WHERE name = 'backend_wait'")" 1

"$GGPROF" merge -o "$OUT/merged.db" "$c" "$OUT/server-$p1.db" "$OUT/server-$p2.db" > "$OUT/merge.txt"
expect "merge succeeds" "$?" 0
expect "merged: the three processes" "$(q "$OUT/merged.db" "SELECT count(*) FROM processes")" 3
expect "merged: every record kept" "$(q "$OUT/merged.db" "SELECT count(*) FROM records")" \
    "$(( $(q "$c" "SELECT count(*) FROM records") + $(q "$OUT/server-$p1.db" "SELECT count(*) FROM records") + \
         $(q "$OUT/server-$p2.db" "SELECT count(*) FROM records") ))"
# Every table of the trace schema, not only the records: each merged table holds the rows of all three inputs
# (the whole run's processes_time and thread tables, losses, placements...), and the per-process meta keys too;
# not `replay`, the results of `ggprof replay` on one trace.
for t in $(sqlite3 "$c" "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('meta', 'replay') ORDER BY name"); do
    n=0
    for db in "$c" "$OUT/server-$p1.db" "$OUT/server-$p2.db"; do n=$((n + $(sqlite3 "$db" "SELECT count(*) FROM \"$t\""))); done
    expect "merged: table $t has every input's rows" "$(sqlite3 "$OUT/merged.db" "SELECT count(*) FROM \"$t\"")" "$n"
done
expect "merged: each process's whole run (processes_time)" "$(sqlite3 "$OUT/merged.db" "SELECT count(DISTINCT pid) FROM processes_time")" 3
expect "merged: each process's threads meta key" "$(sqlite3 "$OUT/merged.db" "SELECT count(*) FROM meta WHERE key GLOB 'threads.[0-9]*'")" \
    "$(( $(sqlite3 "$c" "SELECT count(*) FROM meta WHERE key GLOB 'threads.[0-9]*'") + $(sqlite3 "$OUT/server-$p1.db" "SELECT count(*) FROM meta WHERE key GLOB 'threads.[0-9]*'") + \
         $(sqlite3 "$OUT/server-$p2.db" "SELECT count(*) FROM meta WHERE key GLOB 'threads.[0-9]*'") ))"
expect "merge matched every server compute to a client request" "$(grep -c '6 matched request/response pairs' "$OUT/merge.txt")" 2
# One machine, one clock: an estimate off by more than a few milliseconds would pair the wrong events.
for off in $(grep -o 'offset [-+0-9]* ns' "$OUT/merge.txt" | awk '{ print $2 }'); do
    expect "offset ${off} ns is within 5 ms of the true 0" "$(( ${off#+} < 5000000 && ${off#+} > -5000000 ))" 1
done
