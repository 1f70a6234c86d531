# cpu_contention on real runs (issue 40): llama-completion with as many threads as the CPUs it may use, once with two
# CPU-bound processes on the same CPUs (the threads wait runnable for a CPU: other work on the machine) and once
# without. With them, cpu_contention is the first finding and names no change of options (the advice is to free or
# pin cores); without them it is absent. threads_oversubscribed stays silent in both: the threads fit the CPUs.
. "$(dirname "$0")/../lib.sh"
D=$OUT
P="The quick brown fox jumps over the lazy dog."
rec() { # DB: llama-completion on the dense model, 2 threads on CPUs 0 and 1, 64 tokens
    taskset -c 0,1 "$GGPROF" record -q -o "$1" -- "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" --no-warmup -no-cnv \
        -s 1 -p "$P" -n 64 -t 2 > "${1%.db}.log" 2>&1
}
first() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]; print(f[0]["rule"] if f else "none")' "$1"; }
has() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["findings"]
print(" ".join(k + " " + v for k, v in sorted(x["change"].items())) or "-" if (x := next((x for x in f if x["rule"] == sys.argv[2]), None)) else "absent")' "$@"; }
spinners_start 2 0,1
rec "$D/busy.db"
rc=$?
spinners_stop
expect "busy: llama-completion runs beside two CPU-bound processes" "$rc" 0
rec "$D/idle.db"
expect "idle: llama-completion runs alone" "$?" 0
"$GGPROF" report "$D/busy.db" --format json > "$D/busy.json" 2> "$D/busy.err"
"$GGPROF" report "$D/idle.db" --format json > "$D/idle.json" 2> "$D/idle.err"
expect "busy: cpu_contention is the first finding" "$(first "$D/busy.json")" cpu_contention
expect "busy: cpu_contention names no change of options" "$(has "$D/busy.json" cpu_contention)" "-"
expect "busy: threads_oversubscribed silent (2 threads, 2 CPUs)" "$(has "$D/busy.json" threads_oversubscribed)" absent
expect "idle: cpu_contention absent" "$(has "$D/idle.json" cpu_contention)" absent
