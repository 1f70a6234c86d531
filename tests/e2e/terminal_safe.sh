# A trace's text never reaches the terminal as a control character (docs/analysis.md, "Text outputs"): a JSON
# profile, a database made from a sample and a recorded llama-completion trace, every text of each carrying ESC, BEL,
# an OSC that sets the window title, a CSI that clears the screen, the C1 CSI (U+009B), BS and DEL, through every
# command with a text output and its errors; then `top` in tmux against a fake metrics endpoint that serves such
# names. No byte 0x00-0x08, 0x0b-0x1f or 0x7f, and no C1 code point, on stdout or stderr; the names are there,
# written out (\x1b).
. "$(dirname "$0")/../lib.sh"
S="$GGPROF_ROOT/samples/traces"
cd "$OUT" || exit 1
rm -rf ./* 2> /dev/null

# controls FILE...: per file, a line "FILE N", N the number of its control bytes and C1 code points (UTF-8 decoded:
# a byte that is not UTF-8 is no code point), then the first one's context.
controls() {
    python3 - "$@" <<'PY'
import re, sys
for f in sys.argv[1:]:
    t = open(f, "rb").read().decode("utf-8", "replace")
    hits = [m.start() for m in re.finditer("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]", t)]
    print(f, len(hits), "first: %r" % t[max(0, hits[0] - 30):hits[0] + 30] if hits else "")
PY
}
EVIL=$'\e]0;pwned\a\e[2J\xc2\x9b1m\b\x7f'

# poison DB: every text value of every table (but meta) framed by EVIL, and a notes row
poison() {
    python3 - "$1" "$EVIL" <<'PY'
import sqlite3, sys
db, evil = sqlite3.connect(sys.argv[1]), sys.argv[2].encode("utf-8", "surrogateescape").decode("utf-8")
for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta'").fetchall():
    for col in db.execute('PRAGMA table_info("%s")' % t).fetchall():
        db.execute('UPDATE "%s" SET "%s" = ? || "%s" || ? WHERE typeof("%s") = \'text\'' % (t, col[1], col[1], col[1]),
                   (evil, evil))
db.execute("INSERT INTO notes(pid, text) VALUES (1, ?)", ("a note " + evil,))
db.commit()
PY
}

# 1. A JSON profile: op names, tensor names, backends and fusions.
python3 - "$S/upstream-v3.json" evil.json "$EVIL" <<'PY'
import json, sys
d, evil = json.load(open(sys.argv[1])), sys.argv[3].encode("utf-8", "surrogateescape").decode("utf-8")
for b in d["backends"]:
    b["name"], b["device"] = evil + b["name"], evil + b["device"]
for i, r in enumerate(d["records"]):
    if i % 3 == 0: r["name"] = r["name"] + evil
    if r.get("tensor_name"): r["tensor_name"] = evil + r["tensor_name"]
    if r.get("extra"): r["extra"] = evil + r["extra"]
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
# 2. A database from a sample, with two capture windows and a process.
"$GGPROF" query "$S/rollup-dense.json.gz" "VACUUM INTO '$OUT/sample.db'" > /dev/null
sqlite3 sample.db "INSERT INTO windows(id, start_ns, end_ns, opened_by, closed_by) SELECT 1, min(start_ns),
    min(start_ns) + (max(start_ns) - min(start_ns)) / 2, 'start', 'SIGUSR1' FROM events;
    INSERT INTO windows(id, start_ns, end_ns, opened_by, closed_by) SELECT 2, min(start_ns) + (max(start_ns) -
    min(start_ns)) / 2 + 1, max(start_ns), 'SIGUSR1', 'exit' FROM events;
    INSERT INTO processes(pid, exe) SELECT min(pid), 'llama' FROM events"
cp sample.db evil-sample.db
poison evil-sample.db
# 3. A recorded trace: memory, placement, threads, the accounting, the findings.
record_completion dense real.db
expect "llama-completion recorded" "$?" 0
cp real.db evil-real.db
poison evil-real.db
expect "the names reached the traces" "$(q evil-real.db "SELECT count(*) > 0 FROM records WHERE name LIKE '%pwned%'"):$(
    q evil-sample.db "SELECT count(*) > 0 FROM records WHERE tensor_name LIKE '%pwned%'")" "1:1"

# run NAME CMD...: CMD's stdout and stderr in NAME.out and NAME.err; its status in NAME.rc
run() {
    local name=$1 t0=$SECONDS
    shift
    "$@" > "$name.out" 2> "$name.err"
    echo $? > "$name.rc"
    echo "$((SECONDS - t0)) $name" >> times.txt
}
for t in evil.json evil-sample.db evil-real.db; do
    b=${t%.*}
    run "$b.report" "$GGPROF" report "$t"
    run "$b.report-json" "$GGPROF" report "$t" --format json
    run "$b.report-window" "$GGPROF" report "$t" --window 2
    for c in top-ops top-kernels inefficiency; do
        run "$b.$c" "$GGPROF" "$c" "$t" -n 0
        run "$b.$c-json" "$GGPROF" "$c" "$t" -n 0 --format json
    done
    for by in layer "layer --ops" block "block --ops" phase graph request; do
        # shellcheck disable=SC2086 # the grouping is one or two words
        run "$b.rollup-${by// /}" "$GGPROF" rollup "$t" --by $by
    done
    for m in "" --peak --layers --timeline; do
        # shellcheck disable=SC2086 # the mode is one word or none
        run "$b.memory$m" "$GGPROF" memory "$t" $m
    done
    run "$b.diff" "$GGPROF" diff "$t" "$t"
    run "$b.query" "$GGPROF" query "$t" "SELECT name, tensor_name, extra FROM records LIMIT 200"
    run "$b.export-text" sh -c '"$0" export "$1" --text /dev/stdout | cat' "$GGPROF" "$t"
    run "$b.export-test-file" "$GGPROF" export "$t" --test-file "$b.cases.txt"
    run "$b.export-dot" sh -c '"$0" export "$1" --dot /dev/stdout | cat' "$GGPROF" "$t"
    # errors that quote the user's values and the trace's strings
    run "$b.err-process" "$GGPROF" report "$t" --process "1$EVIL"
    run "$b.err-window" "$GGPROF" top-ops "$t" --window 7
done
run err-missing "$GGPROF" report "$OUT/no$EVIL.db"
run err-command "$GGPROF" "report$EVIL" x
run err-sql "$GGPROF" query evil-sample.db "SELECT $EVIL FROM records"
cp sample.db evilcol.db
sqlite3 evilcol.db "ALTER TABLE notes ADD COLUMN \"x$EVIL\" TEXT"
run err-column "$GGPROF" report evilcol.db --graphs 0-5
for f in *.rc; do
    expect "${f%.rc}: exits 0 or 2" "$(grep -cx '[02]' "$f")" 1
done
while read -r f n first; do
    expect "$f: no control character" "$n${first:+ $first}" 0
done < <(controls *.out *.err)
# They would pass with the names gone: the names are there, written out.
for f in evil.report evil-sample.report evil-real.report evil.diff evil-real.diff evil-real.memory evil-real.top-ops \
    evil-real.query evil-real.export-text evil-real.err-process; do
    out=$f.out
    [ -s "$out" ] || out=$f.err
    expect_ge "$f: the names written out (\\x1b]0;pwned\\x07)" "$(grep -c '\\x1b\]0;pwned\\x07\\x1b\[2J\\xc2\\x9b1m\\x08\\x7f' \
        "$out")" 1
done
expect "errors: a message quoting a name is one line, written out" "$(grep -c '^ggprof: report: .*\\x1b\]0;pwned' \
    err-missing.err):$(grep -c 'pwned' err-command.err):$(wc -l < err-column.err)" "1:1:1"
expect "JSON: the names come back exactly" "$(python3 -c '
import json, sys
d = json.load(open("evil-real.top-ops-json.out"))
print(sum(sys.argv[1] in r["op"] for r in d) > 0)' "$(printf '%s' "$EVIL")")" True

# top: a fake `record --metrics` endpoint whose op and backend names carry the same controls, raw in the labels.
if command -v tmux > /dev/null; then
    python3 - "$EVIL" > metrics.port <<'PY' &
import http.server, socketserver, sys, time
evil = sys.argv[1].encode("utf-8", "surrogateescape")
t0 = time.time()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        k = time.time() - t0
        body = b"".join(b'%s{op="MUL_MAT%s",backend="CPU%s"} %f\n' % (m, evil, evil, k * v) for m, v in
                        ((b"ggml_op_seconds_total", 0.5), (b"ggml_op_calls_total", 100.0)))
        body += b'ggml_backend_busy_seconds_total{backend="%sCPU"} %f\n' % (evil, k * 0.5)
        body += b'llama_tokens_total{phase="generation"} %f\n' % (k * 10)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = socketserver.TCPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
    srv=$!
    for _ in $(seq 1 50); do [ -s metrics.port ] && break; sleep 0.1; done
    sock=ggprof-termsafe-$$
    tm() { tmux -L "$sock" "$@"; }
    # top alone in the pane (no shell: its prompt's own sequences), what it writes piped raw into top.raw
    tm new-session -d -x 100 -y 24 -s top \
        "env -i PATH=$PATH TERM=xterm-256color '$GGPROF' top 127.0.0.1:$(cat metrics.port) --window 1; sleep 30"
    tm pipe-pane -t top -o "cat > '$OUT/top.raw'"
    sleep 3.5
    tm capture-pane -t top -p > top.screen
    title=$(tm display-message -p -t top '#{pane_title}')
    tm send-keys -t top q
    sleep 0.5
    tm kill-server 2> /dev/null
    kill "$srv" 2> /dev/null
    wait "$srv" 2> /dev/null
    expect "top: the op row is on screen, its names written out" \
        "$(grep -c '^MUL_MAT\\x1b\]0;pwned\\x07.* CPU\\x1b\]0;pw' top.screen)" 1
    expect "top: the window title is not the trace's" "$(case $title in *pwned*) echo set ;; *) echo kept ;; esac)" kept
    # top's own sequences (screen, cursor, reverse and bold, the alternate screen) and its \r taken out: nothing else
    python3 - top.raw > top.rest <<'PY'
import re, sys
b = open(sys.argv[1], "rb").read()
b = re.sub(rb"\x1b\[(\?1049[hl]|\?25[hl]|H|2J|[017]m|\d+;1H)", b"", b).replace(b"\r", b"")
open(sys.argv[1] + ".rest", "wb").write(b)
PY
    read -r _ n first < <(controls top.raw.rest)
    expect "top: the raw screen holds no control but top's own" "$n${first:+ $first}" 0
    expect_ge "... and top drew its screen" "$(grep -c 'CALLS/s' top.raw)" 1
else
    not_ok "top" "tmux is not installed (tests/deps.sh)"
fi
