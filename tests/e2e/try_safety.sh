# ggprof try's rules of safety and what record stores for it, on a stand-in "llama-completion" (a shell script, no
# ggml: record still stores its command, and a meta row makes threads_oversubscribed fire on its trace): the meta
# (argv, cwd, env without secrets, uid), the change applied to each spelling of -t, --dry-run running nothing, the
# refusals (no terminal, another user's trace, a command gone, a program try cannot try, an older trace), a command
# that fails (its status said, nothing left running) and Ctrl-C in the middle (children ended, nothing left behind).
# Needs no fixture: `GGPROF=build/bin/ggprof GGPROF_TEST_OUT=/tmp/t bash tests/e2e/try_safety.sh` runs it alone.
. "$(dirname "$0")/../lib.sh"
D=$OUT
mark=try_safety_$$ # in every stand-in's arguments: pgrep finds what is left of them
mkdir -p "$D/bin" "$D/tmp" "$D/work"
rm -f "$D/ran" # the runs the stand-in made, this time only
# The stand-in: writes its working directory, GGML_TRY_TEST and -t into $D/ran (the runs it made), then by its
# prompt: exits 3 (fail), runs 30 s then writes "finished" there (slow), or ends at once.
cat > "$D/bin/llama-completion" <<EOF
#!/bin/sh
t=-; p=
for a in "\$@"; do case "\$prev" in -t|--threads) t=\$a;; -p) p=\$a;; esac; case "\$a" in --threads=*) t=\${a#--threads=};; esac; prev=\$a; done
echo "\$(pwd) \${GGML_TRY_TEST:-unset} \$t" >> "$D/ran"
echo "the stand-in's own output"; echo "the stand-in's own error" >&2
case "\$p" in fail*) exit 3;; slow*) sleep 30; echo finished >> "$D/ran";; esac
exit 0
EOF
chmod +x "$D/bin/llama-completion"
touch "$D/work/model.gguf"
try() { TMPDIR=$D/tmp "$GGPROF" try "$@"; }
# set_meta DB KEY VALUE; oversubscribe DB: threads.PID = 4 on the process's 2 CPUs allowed (threads_oversubscribed).
set_meta() { sqlite3 "$1" "INSERT OR REPLACE INTO meta VALUES('$2', '$(printf %s "$3" | sed "s/'/''/g")')"; }
oversubscribe() {
    local pid
    pid=$(q "$1" "SELECT substr(key, 14) FROM meta WHERE key LIKE 'cpus_allowed.%' ORDER BY key LIMIT 1")
    set_meta "$1" "threads.$pid" 4
    set_meta "$1" "cpus_allowed.$pid" 2
}
# argv_of JSON [TRIAL]: the baseline's command (or trial TRIAL's), space-joined.
argv_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(" ".join(d["command"] if len(sys.argv) < 3 else d["trials"][int(sys.argv[2])]["command"]))' "$@"; }

(cd "$D/work" && GGML_TRY_TEST=recorded LLAMA_API_KEY=secret_$mark "$GGPROF" record -q -o "$D/t4.db" -- \
    ../bin/llama-completion -m model.gguf -t 4 -p "ok $mark" > /dev/null 2>&1)
expect "the stand-in runs under record" "$?" 0
oversubscribe "$D/t4.db"

# What record stores for a rerun.
expect "meta argv: the arguments as a JSON array" "$(q "$D/t4.db" "SELECT value FROM meta WHERE key = 'argv'")" \
    "[\"../bin/llama-completion\", \"-m\", \"model.gguf\", \"-t\", \"4\", \"-p\", \"ok $mark\"]"
expect "meta cwd" "$(q "$D/t4.db" "SELECT value FROM meta WHERE key = 'cwd'")" "$(cd "$D/work" && pwd -P)"
expect "meta uid" "$(q "$D/t4.db" "SELECT value FROM meta WHERE key = 'uid'")" "$(id -u)"
expect "meta hostname" "$(q "$D/t4.db" "SELECT value FROM meta WHERE key = 'hostname'")" "$(hostname)"
env_keys=$(q "$D/t4.db" "SELECT value FROM meta WHERE key = 'env'" | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin))))')
expect "meta env: GGML_* and PATH kept" "$(echo " $env_keys " | grep -c ' GGML_TRY_TEST .* PATH ')" 1
expect "meta env: no secret, no HOME" "$(echo " $env_keys " | grep -c -e ' LLAMA_API_KEY ' -e ' HOME ')" 0

# --dry-run: the baseline and the changed command, -t replaced in each spelling (or appended), nothing run.
try "$D/t4.db" --dry-run --format json > "$D/dry.json" 2> "$D/dry.err"
expect "--dry-run exits 0" "$?" 0
expect "--dry-run: the baseline is the recorded command" "$(argv_of "$D/dry.json")" "../bin/llama-completion -m model.gguf -t 4 -p ok $mark"
expect "--dry-run: threads_oversubscribed's command has -t 2" "$(argv_of "$D/dry.json" 0)" \
    "../bin/llama-completion -m model.gguf -t 2 -p ok $mark"
try "$D/t4.db" --dry-run > "$D/dry.txt" 2>&1
expect "--dry-run text: both commands printed" "$(grep -c -e '^  baseline: .* -t 4 ' -e '^  threads_oversubscribed: .* -t 2 ' "$D/dry.txt")" 2
expect "--dry-run ran nothing" "$(cat "$D/ran" 2> /dev/null | wc -l)" 1 # the record above only
form() { # FORM WANT: -t given as FORM (words) becomes WANT in the changed command
    cp "$D/t4.db" "$D/form.db"
    set_meta "$D/form.db" argv "$(python3 -c 'import json,sys
print(json.dumps(["../bin/llama-completion", "-m", "model.gguf"] + sys.argv[1].split() + ["-p", "x"]))' "$1")"
    try "$D/form.db" --dry-run --format json > "$D/form.json" 2> /dev/null
    expect "the change replaces '${1:-(none)}'" "$(argv_of "$D/form.json" 0)" "../bin/llama-completion -m model.gguf $2"
}
form "--threads 4" "--threads 2 -p x"
form "--threads=4" "--threads=2 -p x"
form "-t 8 --threads 4" "-t 2 --threads 2 -p x"
form "" "-p x -t 2"

# Refusals, each one line, exit 2, nothing run.
refused() { # NAME EXPECTED_GREP DB [ARGS]
    local name=$1 pattern=$2 db=$3
    shift 3
    try "$db" "$@" < /dev/null > "$D/refused.out" 2> "$D/refused.err"
    local rc=$?
    expect "$name: exit 2" "$rc" 2
    expect "$name: one line on stderr saying so" "$(wc -l < "$D/refused.err"):$(grep -c -e "$pattern" "$D/refused.err")" "1:1"
}
ran_before=$(wc -l < "$D/ran")
try "$D/t4.db" < /dev/null > /dev/null 2> "$D/noterm.err"
expect "without a terminal and without --yes: refused (exit 2)" "$?" 2
expect "without a terminal: the commands shown, then why" "$(grep -c -e 'baseline: ' -e 'needs --yes' "$D/noterm.err")" 2
cp "$D/t4.db" "$D/other.db"
set_meta "$D/other.db" uid 12345
try "$D/other.db" < /dev/null > /dev/null 2> "$D/other.err"
expect "another user's trace: refused" "$?:$(grep -c 'not your own trace (it was recorded by uid 12345)' "$D/other.err")" "2:1"
cp "$D/t4.db" "$D/elsewhere.db"
set_meta "$D/elsewhere.db" hostname "not-$(hostname)"
set_meta "$D/elsewhere.db" machine_id 0123456789abcdef0123456789abcdef
try "$D/elsewhere.db" < /dev/null > /dev/null 2> "$D/elsewhere.err"
expect "another machine's trace: refused" "$?:$(grep -c '^ggprof: try: .*recorded on another machine' "$D/elsewhere.err")" "2:1"
cp "$D/t4.db" "$D/gone.db"
set_meta "$D/gone.db" argv '["../bin/llama-completion-gone", "-m", "model.gguf", "-t", "4"]'
refused "a command whose binary is gone" "is gone: '../bin/llama-completion-gone' no longer exists" "$D/gone.db" --yes
set_meta "$D/gone.db" argv '["../bin/llama-completion", "-m", "gone.gguf", "-t", "4"]'
refused "a command whose model is gone" "is gone: its model 'gone.gguf' no longer exists" "$D/gone.db" --dry-run
set_meta "$D/gone.db" argv '["../bin/llama-completion", "-m", "model.gguf", "-f", "gone.wav"]'
refused "a command whose input file is gone" "is gone: its input file 'gone.wav' no longer exists" "$D/gone.db" --yes
set_meta "$D/gone.db" argv '["/bin/sh", "-c", "echo pwned > /tmp/pwned_'$mark'"]'
refused "a program try does not know" "'sh' cannot be tried" "$D/gone.db" --yes
set_meta "$D/gone.db" argv '["../bin/llama-server", "-m", "model.gguf"]'
cp "$D/bin/llama-completion" "$D/bin/llama-server"
refused "llama-server" "requests cannot be replayed" "$D/gone.db" --yes
sqlite3 "$D/gone.db" "DELETE FROM meta WHERE key = 'argv'"
refused "a trace without argv (an older record)" "does not hold its command's arguments" "$D/gone.db" --yes
refused "--rule that did not fire" "did not fire" "$D/t4.db" --rule host_gap --yes
expect "nothing ran for any refusal" "$(wc -l < "$D/ran")" "$ran_before"
expect "no shell command ran" "$(ls /tmp/pwned_$mark 2> /dev/null | wc -l)" 0

# A command that fails: its status said, exit 1, nothing left running or behind; the rerun had the recorded working
# directory and environment (GGML_TRY_TEST), not this shell's.
cp "$D/t4.db" "$D/fail.db"
set_meta "$D/fail.db" argv '["../bin/llama-completion", "-m", "model.gguf", "-t", "4", "-p", "fail '$mark'"]'
GGML_TRY_TEST=this_shell try "$D/fail.db" --yes > "$D/fail.out" 2> "$D/fail.err"
expect "a failing command: exit 1" "$?" 1
expect "a failing command: its status said" "$(grep -c 'exited with status 3' "$D/fail.err")" 1
expect "a failing command: its output not in ggprof's" "$(cat "$D/fail.out" "$D/fail.err" | grep -c "stand-in's own output")" 0
expect "the rerun: recorded cwd and environment, the recorded -t" "$(tail -1 "$D/ran")" "$(cd "$D/work" && pwd -P) recorded 4"
expect "a failing command: nothing left running" "$(pgrep -f "$mark" | wc -l)" 0
expect "a failing command: nothing left in TMPDIR" "$(ls -A "$D/tmp" | wc -l)" 0

# Ctrl-C in the middle: the run (record and its workload, in their own process group) ended, exit 130, the
# temporary folder gone.
cp "$D/t4.db" "$D/slow.db"
set_meta "$D/slow.db" argv '["../bin/llama-completion", "-m", "model.gguf", "-t", "4", "-p", "slow '$mark'"]'
TMPDIR=$D/tmp "$GGPROF" try "$D/slow.db" --yes > "$D/slow.out" 2> "$D/slow.err" & # not through try(): $! is ggprof
tp=$!
for _ in $(seq 100); do grep -q "recorded 4" "$D/ran" && [ "$(pgrep -f "slow $mark" | wc -l)" -ge 2 ] && break; sleep 0.1; done
expect "Ctrl-C: the run was going, its folder in TMPDIR" "$(ls -A "$D/tmp" | wc -l)" 1
expect_ge "Ctrl-C: the run was going" "$(pgrep -f "slow $mark" | wc -l)" 1
kill -INT "$tp"
wait "$tp"
expect "Ctrl-C: exit 130" "$?" 130
expect "Ctrl-C: said on stderr" "$(grep -c 'stopped by signal 2' "$D/slow.err")" 1
expect "Ctrl-C: nothing left running" "$(pgrep -f "$mark" | wc -l)" 0
expect "Ctrl-C: the run was ended, not waited for" "$(grep -c finished "$D/ran")" 0
expect "Ctrl-C: nothing left in TMPDIR" "$(ls -A "$D/tmp" | wc -l)" 0
