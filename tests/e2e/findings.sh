# report's findings (docs/findings.md): each rule fires on a run built for it, with the op, layer and backend
# named, and stays silent on a run without the cause. Real llama-completion runs where a run shows the rule
# (small_ubatch, thread_imbalance, below_roof, loading, peak_tensor); copies of a real trace altered with the
# sqlite3 shell where it cannot on this machine (fallback, which placement.sh also shows on real fallbacks;
# threads_oversubscribed, cpu_contention, host_gap, graph_build, copies). Each rule's thresholds and edges are
# tested in seconds on hand-built traces by tests/rules/.
# Every JSON output is parsed by python3's json module; the CSV by csv_col's reader.
. "$(dirname "$0")/../lib.sh"
S=$GGPROF_ROOT/samples/traces
D=$OUT
P="The quick brown fox jumps over the lazy dog. $(seq -s ' ' 1 40)"
rec() { # DB ARGS...: llama-completion on the dense model, no warm-up, seed 1
    local db=$1
    shift
    ${PIN:-} "$GGPROF" record -q -o "$db" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" --no-warmup -no-cnv -s 1 "$@" \
        > "${db%.db}.log" 2>&1
}
# rules JSON: the rules that fired, one a line; fired_ev JSON RULE KEY: that finding's evidence value.
csv_rule_col() { python3 -c 'import csv,sys; [print(r["rule"]) for r in csv.DictReader(open(sys.argv[1]))]' "$1"; }
rules() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(f["rule"]) for f in d["findings"]]' "$1"; }
ev() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
f=[f for f in d["findings"] if f["rule"]==sys.argv[2]]; print(f[0]["evidence"].get(sys.argv[3], "-") if f else "silent")' "$@"; }
# change JSON RULE: that finding's change of options, "FLAG VALUE" pairs sorted, "-" for {}, "silent".
change() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
f=[f for f in d["findings"] if f["rule"]==sys.argv[2]]
print(" ".join(k + " " + v for k, v in sorted(f[0]["change"].items())) or "-" if f else "silent")' "$@"; }
report_json() { "$GGPROF" report "$1" --format json "${@:3}" > "$2" 2> "$2.err" || echo "report $1 failed: $(cat "$2.err")"; }

# A prompt of 50+ tokens in ubatches of 8 on 2 threads; a short prompt on 1 thread.
# The 2 threads share one CPU (taskset), so that thread 0 waits for the other at the barriers whatever the machine's
# load: on two idle cores their imbalance can stay under the rule's 5%.
PIN="taskset -c 0" rec "$D/ub8.db" -p "$P" -n 2 -t 2 -ub 8 -b 64
expect "ub8: llama-completion runs" "$?" 0
rec "$D/t1.db" -p "Hello there" -n 4 -t 1
expect "t1: llama-completion runs" "$?" 0

report_json "$D/ub8.db" "$D/ub8.json" --roof CPU=2000,20000
report_json "$D/ub8.db" "$D/ub8-noroof.json"
report_json "$D/t1.db" "$D/t1.json"

# The JSON's shape: accounting per process whose categories add up to its wall time, findings ranked.
expect "json: top-level keys" "$(python3 -c 'import json,sys; print(sorted(json.load(open(sys.argv[1])).keys()))' "$D/ub8.json")" \
    "['accounting', 'findings', 'ops', 'threads', 'trace']"
expect "json: categories sum to wall, per process" "$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); print(all(sum(a["categories"].values())==a["wall_ns"] and a["wall_ns"]>0 for a in d["accounting"]) and len(d["accounting"]) > 0)' "$D/ub8.json")" True
expect "json: findings ranked by at_stake_ns, each with rule, evidence, advice" "$(python3 -c 'import json,sys
f=json.load(open(sys.argv[1]))["findings"]; s=[x["at_stake_ns"] for x in f]
print(s==sorted(s, reverse=True) and all(set(x)>={"rule","at_stake_ns","evidence","advice","change"} and x["advice"]
    and isinstance(x["change"], dict) and all(isinstance(v, str) for v in x["change"].values()) for x in f))' "$D/ub8.json")" True

# small_ubatch: 8 tokens a graph; silent on a prompt that fits one graph.
expect "small_ubatch fires on -ub 8" "$(ev "$D/ub8.json" small_ubatch ubatch_tokens)" 8
expect "small_ubatch silent on a one-graph prompt" "$(ev "$D/t1.json" small_ubatch ubatch_tokens)" silent
# The fixture's build has ggml-blas, which takes matmuls of 32 tokens or more; at -ub 8 it computed none, so the
# trace cannot compare it with the CPU and the advice keeps the matmuls on the CPU (-ub 31), not -ub 512.
expect "small_ubatch on the BLAS build: blas, change" "$(ev "$D/ub8.json" small_ubatch blas):$(change "$D/ub8.json" small_ubatch)" \
    "unknown:-ub 31"
# thread_imbalance: the -ub 8 run is 2 threads pinned to 1 CPU, so its barrier waits are threads_oversubscribed's (which
# advises -t 1) and thread_imbalance, which would count the same waits again, is silent there; it fires on a process
# whose threads fit its CPUs (tests/rules/cases/thread_imbalance_over.sql), and is silent with 1 thread.
expect "thread_imbalance leaves an oversubscribed run to threads_oversubscribed" \
    "$(ev "$D/ub8.json" thread_imbalance op):$(change "$D/ub8.json" threads_oversubscribed)" "silent:-t 1"
expect "thread_imbalance silent on -t 1" "$(ev "$D/t1.json" thread_imbalance op)" silent
# below_roof: far below roofs no CPU reaches (2000 GB/s, 20 TFLOP/s) every op's time is nearly all above its roof,
# so the rule names the CPU op with the most time, whatever the machine's speed: MUL_MAT on most CPUs, FLASH_ATTN_EXT
# where AMX kernels compute MUL_MAT (an Intel Xeon with AMX_INT8); within 5% of the most, for ops that come close.
# Silent without a roof.
roof_op=$(ev "$D/ub8.json" below_roof op)
expect "below_roof fires with --roof: on the CPU" "$(ev "$D/ub8.json" below_roof backend)" CPU
expect "below_roof fires with --roof: the op with the most time ($roof_op)" "$(q "$D/ub8.db" "WITH t AS (SELECT name,
    sum(duration_ns) d FROM records WHERE type = 0 GROUP BY name) SELECT count(*) FROM t WHERE name = '$roof_op'
    AND d >= 0.95 * (SELECT max(d) FROM t)")" 1
expect "below_roof silent without --roof" "$(ev "$D/ub8-noroof.json" below_roof op)" silent
# loading: a 4-token run is mostly loading (process start to first graph); silent when the trace knows neither the
# process's start (processes, processes_time) nor its buffers.
expect_ge "loading fires on a short run" "$(ev "$D/t1.json" loading before_first_graph_ns)" 1
cp "$D/t1.db" "$D/noload.db"
sqlite3 "$D/noload.db" "UPDATE processes SET start_ns = NULL; DELETE FROM buffer_list; DELETE FROM processes_time"
report_json "$D/noload.db" "$D/noload.json"
expect "loading silent without the process's start or buffers" "$(ev "$D/noload.json" loading wall_ns)" silent
# Its advice follows the largest part before the first graph: on the short run, whichever of start-up, loading and
# context set-up is largest; with the process's fork moved 10 s earlier (a slow start), the start-up.
largest() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
f=[f for f in d["findings"] if f["rule"]=="loading"]; e=f[0]["evidence"] if f else {}
parts={k: int(e.get(k + "_ns", -1)) for k in ("startup", "loading", "context_setup")}
print(e.get("largest"), max(parts, key=parts.get), "keep one process running" in (f[0]["advice"] if f else ""))' "$1"; }
read -r named argmax keep <<< "$(largest "$D/t1.json")"
expect "loading names its largest part" "$named" "$argmax"
expect "loading's advice: keep one process running" "$keep" True
cp "$D/t1.db" "$D/slowstart.db"
sqlite3 "$D/slowstart.db" "UPDATE processes_time SET fork_ns = fork_ns - 10000000000"
report_json "$D/slowstart.db" "$D/slowstart.json"
expect "loading: a slow start is named as the largest part" "$(largest "$D/slowstart.json" | cut -d' ' -f1,2)" \
    "startup startup"
expect "loading: a slow start's advice speaks of the process's start" \
    "$(python3 -c 'import json,sys; print(any(f["rule"] == "loading" and "the process'"'"'s start" in f["advice"]
    for f in json.load(open(sys.argv[1]))["findings"]))' "$D/slowstart.json")" True
# peak_tensor: the logits are most of the tiny model's compute buffer; silent on a trace without memory.
expect "peak_tensor fires: the logits' tensor" "$(ev "$D/t1.json" peak_tensor node):$(ev "$D/t1.json" peak_tensor op)" \
    "result_output:MUL_MAT"
report_json "$S/llama-dense-f16.json.gz" "$D/sample.json"
expect "peak_tensor silent without memory records" "$(ev "$D/sample.json" peak_tensor node)" silent

# Altered copies of the 1-thread run (the sqlite3 shell writes; ggprof opens traces read-only).
alter() { cp "$D/t1.db" "$D/$1.db" && sqlite3 "$D/$1.db" "$2" && report_json "$D/$1.db" "$D/$1.json"; }
# fallback: Kcur-1's nodes ran on the CPU where BLAS (the best device here) does not support them (the run's own
# rows in node_placements replaced; tests/e2e/placement.sh shows the rule on real fallbacks).
alter fallback "DELETE FROM node_placements;
    INSERT INTO node_placements SELECT DISTINCT e.pid, e.sched_id, min(e.graph_id), e.node_index, e.node_id, e.backend_id,
    0, 'unsupported', NULL FROM events e JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id
    WHERE e.type = 0 AND n.tensor_name = 'Kcur-1' GROUP BY e.pid, e.sched_id, e.node_index, e.node_id"
expect "fallback fires: op/layer/backend/preferred/reason" "$(for k in op layer backend preferred reason; do
    ev "$D/fallback.json" fallback $k; done | paste -sd:)" "$(q "$D/t1.db" "SELECT op FROM nodes WHERE tensor_name = 'Kcur-1' LIMIT 1"):1:CPU:BLAS:unsupported"
expect "fallback silent where every node ran on its best backend" "$(ev "$D/t1.json" fallback op)" silent
# threads_oversubscribed: 4 threads on 2 allowed CPUs; silent with 2 on 2.
pid=$(q "$D/t1.db" "SELECT pid FROM processes LIMIT 1")
alter oversub "INSERT OR REPLACE INTO meta VALUES ('threads.$pid', '4'), ('cpus_allowed.$pid', '2')"
expect "threads_oversubscribed fires: threads:cpus" "$(ev "$D/oversub.json" threads_oversubscribed threads):$(ev "$D/oversub.json" threads_oversubscribed cpus)" 4:2
expect "threads_oversubscribed: change -t 2" "$(change "$D/oversub.json" threads_oversubscribed)" "-t 2"
expect "threads_oversubscribed: at stake the excess threads' half of the waits" "$(python3 -c 'import json,sys
f=[f for f in json.load(open(sys.argv[1]))["findings"] if f["rule"]=="threads_oversubscribed"][0]
print(abs(f["at_stake_ns"] - f["evidence"]["barrier_ns"] / 2) <= 1)' "$D/oversub.json")" True
alter fits "INSERT OR REPLACE INTO meta VALUES ('threads.$pid', '2'), ('cpus_allowed.$pid', '2')"
expect "threads_oversubscribed silent with threads = CPUs" "$(ev "$D/fits.json" threads_oversubscribed threads)" silent
# cpu_contention: the threads (1 on 2 CPUs) runnable but waiting for a CPU as long as they ran; silent with no wait.
alter contention "UPDATE thread_stats SET runq_ns = cpu_ns"
expect "cpu_contention fires: waiting_share:change" "$(ev "$D/contention.json" cpu_contention waiting_share):$(change "$D/contention.json" cpu_contention)" 0.5:-
alter nocontention "UPDATE thread_stats SET runq_ns = 0"
expect "cpu_contention silent without run-queue wait" "$(ev "$D/nocontention.json" cpu_contention runq_ns)" silent
# host_gap: graphs pushed a second apart; silent on the real run.
alter gaps "UPDATE graph_list SET start_ns = start_ns + 2000000000 WHERE graph_id = (SELECT max(graph_id) FROM graph_list)"
expect "host_gap fires: before a graph" "$(ev "$D/gaps.json" host_gap before_graph)" "$(q "$D/t1.db" "SELECT max(graph_id) FROM graphs")"
expect "host_gap silent on the real run" "$(ev "$D/t1.json" host_gap wall_ns)" silent
# graph_build: llama_decode four times its graphs; silent on the real run.
alter build "UPDATE batches SET duration_ns = duration_ns * 4"
expect_ge "graph_build fires" "$(ev "$D/build.json" graph_build graph_build_ns)" 1
expect "graph_build silent on the real run" "$(ev "$D/t1.json" graph_build decode_ns)" silent
# copies: a host-to-device copy of each MUL_MAT's output as long as the op; silent on the real run.
alter copies "INSERT INTO events(pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, node_index,
    node_id, start_ns, duration_ns, bytes) SELECT pid, tid, 1, 'copy_H2D', 1, 0, sched_id, graph_id, split_id, -1,
    node_id, start_ns, duration_ns, 4096 FROM events WHERE type = 0 AND name = 'MUL_MAT'"
expect "copies fires: op COPY on BLAS" "$(ev "$D/copies.json" copies op):$(ev "$D/copies.json" copies backend)" COPY:BLAS
expect "copies silent on the real run" "$(ev "$D/t1.json" copies op)" silent

# The text report opens with the section: at most five, ranked; the same rules as the JSON.
"$GGPROF" report "$D/ub8.db" --roof CPU=2000,20000 > "$D/ub8.txt"
expect "table: opens with the findings" "$(head -n 1 "$D/ub8.txt" | cut -c1-12)" "=== Findings"
expect "table: the JSON's first rules, in order" "$(sed -n '/^=== Findings/,/^$/p' "$D/ub8.txt" | sed -n 's/^  [0-9]\. \([a-z_]*\):.*/\1/p')" \
    "$(rules "$D/ub8.json" | head -n 5)"
"$GGPROF" report "$D/noload.db" > "$D/none.txt"
expect "table: one line when no rule fires" "$(sed -n 2p "$D/none.txt")" "  No rule fired: nothing stands out in this trace."
# CSV: one row per finding, the same rules.
"$GGPROF" report "$D/ub8.db" --format csv --roof CPU=2000,20000 > "$D/ub8.csv"
expect "csv: the JSON's rules" "$(csv_rule_col "$D/ub8.csv")" "$(rules "$D/ub8.json")"
# diff (docs/rollups-and-diff.md): the same prompt in ubatches of 8 and in one graph (the default -ub): small_ubatch
# appeared in the -ub 8 run and is gone from it, with report's time at stake in the run that has it; every
# finding of each run is in the diff with report's at_stake (ms).
rec "$D/ubdef.db" -p "$P" -n 2 -t 2
expect "ubdef: llama-completion runs" "$?" 0
report_json "$D/ubdef.db" "$D/ubdef.json"
expect "small_ubatch silent with the default -ub" "$(ev "$D/ubdef.json" small_ubatch ubatch_tokens)" silent
"$GGPROF" diff "$D/ubdef.db" "$D/ub8.db" --format json > "$D/def-ub8.json" 2> "$D/def-ub8.err"
expect "diff default -ub 8: exits 0" "$?" 0
fdiff() { # DIFF_JSON A_REPORT B_REPORT: small_ubatch's row (verdict:a:b), and whether each run's findings are report's
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))["findings"]; ra=json.load(open(sys.argv[2]))["findings"]; rb=json.load(open(sys.argv[3]))["findings"]
f=[x for x in d if x["rule"]=="small_ubatch"]
fmt=lambda v: "-" if v is None else "%.3f" % v
print(":".join([f[0]["verdict"], fmt(f[0]["a_at_stake_ms"]), fmt(f[0]["b_at_stake_ms"])]) if len(f)==1 else "rows %d" % len(f))
side=lambda k, r: sorted((x["rule"], "%.3f" % x[k+"_at_stake_ms"]) for x in d if x[k+"_at_stake_ms"] is not None) == sorted((x["rule"], "%.3f" % (x["at_stake_ns"]/1e6)) for x in r)
print(side("a", ra) and side("b", rb))' "$@"
}
stake=$(python3 -c 'import json,sys; print(["%.3f" % (f["at_stake_ns"]/1e6) for f in json.load(open(sys.argv[1]))["findings"] if f["rule"]=="small_ubatch"][0])' "$D/ub8-noroof.json")
{ read -r row; read -r same; } < <(fdiff "$D/def-ub8.json" "$D/ubdef.json" "$D/ub8-noroof.json")
expect "diff default -ub 8: small_ubatch appeared, B's at stake report's" "$row" "appeared:-:$stake"
expect "diff default -ub 8: each run's findings are report's" "$same" True
"$GGPROF" diff "$D/ub8.db" "$D/ubdef.db" --format json > "$D/ub8-def.json"
{ read -r row; read -r same; } < <(fdiff "$D/ub8-def.json" "$D/ub8-noroof.json" "$D/ubdef.json")
expect "diff -ub 8 default: small_ubatch gone, A's at stake report's" "$row" "gone:$stake:-"
expect "diff -ub 8 default: each run's findings are report's" "$same" True
"$GGPROF" diff "$D/ub8.db" "$D/ubdef.db" --format csv > "$D/ub8-def.csv"
expect "diff csv: small_ubatch's row says gone" "$(python3 -c 'import csv,sys
print([r["verdict"] for r in csv.DictReader(open(sys.argv[1])) if r["section"]=="findings" and r["rule"]=="small_ubatch"])' "$D/ub8-def.csv")" "['gone']"
"$GGPROF" diff "$D/ub8.db" "$D/ubdef.db" > "$D/ub8-def.txt"
expect "diff table: a findings section with small_ubatch gone" \
    "$(sed -n '/^findings (/,/^$/p' "$D/ub8-def.txt" | awk '$1 == "small_ubatch" { print $NF }')" gone

# Bad input: exit 2, one line naming the value.
"$GGPROF" report "$D/ub8.db" --format yaml > /dev/null 2> "$D/bad.err"
expect "bad --format: exit 2, one line naming it" "$?:$(wc -l < "$D/bad.err"):$(grep -c yaml "$D/bad.err")" 2:1:1
