# ggprof top in tmux (an 80x24 terminal) on a llama-server recorded with --metrics under a steady load: MUL_MAT and
# tokens/s on screen and changing from one capture to the next; a key changes the sort; q leaves the terminal as
# it was (the shell's screen back, the same stty settings).
. "$(dirname "$0")/../lib.sh"
command -v tmux > /dev/null || { not_ok "tmux" "not installed (tests/deps.sh)"; exit 0; }
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$GGPROF" record -o "$OUT/server.db" --metrics 127.0.0.1:0 -- "$LLAMA_BIN_DIR/llama-server" -m "$GGUF_DENSE" \
    --host 127.0.0.1 --port "$PORT" -np 2 -c 1024 -t 1 > "$OUT/server.log" 2>&1 &
rec=$!
for _ in $(seq 1 150); do curl -s "http://127.0.0.1:$PORT/health" 2> /dev/null | grep -q '"ok"' && break; sleep 0.2; done
metrics=$(sed -n 's|^ggprof: record: metrics at http://\([^/]*\)/metrics$|\1|p' "$OUT/server.log")
# A steady load until the test ends: one request after another
(while :; do curl -s --max-time 60 -X POST "http://127.0.0.1:$PORT/completion" -d '{"prompt": "a story about a fox",
    "n_predict": 24, "cache_prompt": false, "temperature": 0}' > /dev/null || break; done) &
load=$!
sock=ggprof-top-$$
tm() { tmux -L "$sock" "$@"; }
tm new-session -d -x 80 -y 24 -s top "env -i PATH=$PATH TERM=xterm-256color bash --norc --noprofile"
sleep 0.5
tm send-keys -t top "stty -a > '$OUT/stty.before'; clear; echo shell-here" Enter
sleep 0.5
tm send-keys -t top "'$GGPROF' top '$metrics' --window 5; stty -a > '$OUT/stty.after'" Enter
sleep 4
tm capture-pane -t top -p > "$OUT/cap1.txt"
sleep 2.5
tm capture-pane -t top -p > "$OUT/cap2.txt"
expect "top shows MUL_MAT" "$(grep -c '^MUL_MAT ' "$OUT/cap1.txt")" 1
expect "top shows tokens/s" "$(grep -c '^tokens/s  generation [0-9.]* ' "$OUT/cap1.txt")" 1
expect "top fits 80x24" "$(awk 'length($0) > 80 { n++ } END { print NR <= 24 && n == 0 ? "yes" : "no" }' "$OUT/cap1.txt")" yes
expect "MUL_MAT's row changes from one capture to the next" "$([ "$(grep '^MUL_MAT ' "$OUT/cap1.txt")" != \
    "$(grep '^MUL_MAT ' "$OUT/cap2.txt")" ] && echo changed || echo same)" changed
expect "sorted by time, MUL_MAT's row is first" "$(awk '/^OP /{ getline; print $1; exit }' "$OUT/cap2.txt")" MUL_MAT
tm send-keys -t top s
sleep 0.3
tm send-keys -t top s
sleep 0.5
tm capture-pane -t top -p > "$OUT/cap3.txt"
expect "s twice: sorted by op name" "$(grep -c 'sort op *$' "$OUT/cap3.txt")" 1
expect "the rows are in op order" "$(awk '/^OP /{ on = 1; next } on && NF >= 5 && $NF ~ /%$/ { print $1 }' "$OUT/cap3.txt" |
    LC_ALL=C sort -c 2>&1 && echo sorted)" sorted
expect "the order changed: MUL_MAT is not first by name" "$(awk '/^OP /{ getline; print $1; exit }' "$OUT/cap3.txt")" \
    "$(awk '/^OP /{ on = 1; next } on && NF >= 5 && $NF ~ /%$/ { print $1 }' "$OUT/cap3.txt" | LC_ALL=C sort | head -n 1)"
tm send-keys -t top p
sleep 0.3
tm capture-pane -t top -p > "$OUT/cap4.txt"
expect "p pauses" "$(grep -c 'PAUSED' "$OUT/cap4.txt")" 1
tm send-keys -t top q
sleep 1
tm capture-pane -t top -p > "$OUT/cap5.txt"
expect "q: the shell's screen is back" "$(grep -c '^shell-here' "$OUT/cap5.txt")" 1
expect "q: the terminal settings are as they were" "$(cmp -s "$OUT/stty.before" "$OUT/stty.after" && echo same || echo differ)" same
tm kill-server 2> /dev/null
kill "$load" 2> /dev/null
wait "$load" 2> /dev/null
kill -TERM "$rec"
wait "$rec"
expect "record ends with the server" "$?" 0
