# A trace from anyone is data, never code (docs/trace-database.md, "What a trace may contain"). Crafted traces,
# made here with the sqlite3 shell from a checked-in sample: SQL appended to a view's definition, a column named to
# close an INSERT and attach a file, a ggml_lib beside a planted test-backend-ops, extreme times, a JSON name too
# long to hold. Every analysis command, with every window option, must run nothing of them and write nothing but
# the output it was told to; a planted 0600 "creds" database must not be copied. Needs no fixture.
. "$(dirname "$0")/../lib.sh"
S="$GGPROF_ROOT/samples/traces"
cd "$OUT" || exit 1
rm -rf ./* 2> /dev/null

# The base: a sample read from JSON, written out as a trace database; one capture window, a process.
"$GGPROF" query "$S/rollup-dense.json.gz" "VACUUM INTO '$OUT/base.db'" > /dev/null
sqlite3 base.db "INSERT INTO windows(id, start_ns, end_ns, opened_by, closed_by)
    SELECT 1, min(start_ns), max(start_ns), 'start', 'exit' FROM events"
pid=$(sqlite3 base.db "SELECT min(pid) FROM events")
cp base.db proc.db # with its process: merge tells inputs of one pid apart by it
sqlite3 proc.db "INSERT INTO processes(pid, exe) VALUES($pid, 'llama')"
expect "the base trace has records and a window" "$(sqlite3 base.db "SELECT count(*) > 100 FROM events"):$(
    "$GGPROF" report base.db --window 1 > /dev/null; echo $?)" "1:0"

# The user's private database, which a hostile trace would copy out.
sqlite3 creds.db "CREATE TABLE creds(secret TEXT); INSERT INTO creds VALUES('hunter2')"
chmod 600 creds.db

sq() { printf '%s' "$1" | sed "s/'/''/g"; } # SQL string literal body

# 1. SQL appended to a view's text: SQLite parses the first statement only, a reader that runs the text runs all.
payload="; ATTACH '$OUT/creds.db' AS s; ATTACH '$OUT/leak.db' AS l; CREATE TABLE l.t AS SELECT * FROM s.creds"
cp base.db evil.db
sqlite3 evil.db "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = sql || '$(sq "$payload")'
    WHERE type = 'view' AND name = 'graphs'"
expect "the crafted view still reads in sqlite3" "$(sqlite3 evil.db "SELECT count(*) FROM graphs" > /dev/null; echo $?)" 0

# files in the folder, but for the output and what the test makes itself
listing() { ls -A | grep -v -e '^out\.' -e '^run\.' | sort; }
check() { # NAME CMD...: runs CMD; nothing new in the folder but out.*, the creds never copied
    local name=$1
    shift
    rm -f out.* leak.db
    local before
    before=$(listing)
    "$@" > run.stdout 2> run.stderr
    local rc=$?
    expect "$name: exits 0 or 2, no crash" "$([ $rc -eq 0 ] || [ $rc -eq 2 ] && echo yes)" yes
    expect "$name: writes nothing but its output" "$(listing | tr '\n' ' ')" "$(echo "$before" | tr '\n' ' ')"
    expect "$name: the creds are not copied" "$(grep -rlas hunter2 --exclude=creds.db . | wc -l)" 0
}
windows=("--from 0 --to 0.01" "--graphs 0-5" "--process $pid" "--window 1")
for w in "${windows[@]}"; do
    # shellcheck disable=SC2086 # the window is several words
    for cmd in report top-ops top-kernels inefficiency rollup; do check "$cmd $w" "$GGPROF" $cmd evil.db $w; done
    check "diff $w" "$GGPROF" diff evil.db evil.db $w
    check "export --chrome $w" "$GGPROF" export evil.db $w --chrome out.chrome.json
    check "export --html $w" "$GGPROF" export evil.db $w --html out.html
    check "export --json $w" "$GGPROF" export evil.db $w --json out.json.gz
done
check "memory" "$GGPROF" memory evil.db
check "query" "$GGPROF" query evil.db "SELECT count(*) FROM graphs"
expect "export --graphs: a window of the crafted trace is exported all the same" "$("$GGPROF" export evil.db \
    --graphs 0-5 --chrome out.c.json > /dev/null 2>&1; echo $?):$(grep -c traceEvents out.c.json)" "0:1"

# 2. merge: a column whose name closes the INSERT and attaches a file; refused by name, nothing written.
col="text) SELECT 1,1,1 WHERE 0; ATTACH '$OUT/leak2.db' AS w; CREATE TABLE w.t(x); --"
cp proc.db evilcol.db
sqlite3 evilcol.db "ALTER TABLE notes ADD COLUMN \"$(printf '%s' "$col" | sed 's/"/""/g')\" TEXT"
"$GGPROF" merge -o out.merged.db proc.db evilcol.db > run.stdout 2> run.stderr
rc=$?
expect "merge of a crafted column: exit 2, one line naming the file, table and column" \
    "$rc:$(wc -l < run.stderr):$(grep -c "evilcol.db.*'notes'.*ATTACH" run.stderr)" "2:1:1"
expect "merge of a crafted column: no file attached or created" "$(ls leak2.db out.merged.db 2> /dev/null | wc -l)" 0
"$GGPROF" report evilcol.db --graphs 0-5 > run.stdout 2> run.stderr
expect "report of a crafted column: refused by name" "$?:$(grep -c "'notes'" run.stderr)" "2:1"
expect "report of a crafted column: nothing attached" "$(ls leak2.db 2> /dev/null | wc -l)" 0
check "merge of the crafted view" "$GGPROF" merge -o out.m.db proc.db evil.db


# 3. replay: the trace's ggml_lib points into a folder holding a test-backend-ops that would leave a marker.
mkdir -p planted
printf '#!/bin/sh\ntouch "%s/replay-marker"\n' "$OUT" > planted/test-backend-ops
chmod +x planted/test-backend-ops
cp proc.db replay.db
sqlite3 replay.db "UPDATE nodes SET op_id = 29; UPDATE processes SET ggml_lib = '$OUT/planted/libggml.so'"
PATH=/usr/bin:/bin "$GGPROF" replay replay.db > run.stdout 2> run.stderr
rc=$?
expect "replay: the planted test-backend-ops is not run" "$(ls replay-marker 2> /dev/null | wc -l)" 0
expect "replay: exit 2, one line, the traced folder quoted as a hint" "$rc:$(wc -l < run.stderr):$(grep -c \
    "'$OUT/planted'" run.stderr)" "2:1:1"
PATH=/usr/bin:/bin "$GGPROF" replay replay.db --test-backend-ops "$OUT/planted/test-backend-ops" > /dev/null 2>&1
expect "replay: the user's --test-backend-ops is run (the check above can fail)" "$(ls replay-marker 2> /dev/null |
    wc -l)" 1
rm -f replay-marker
expect "merge of two clean traces still works" "$("$GGPROF" merge -o out.m.db proc.db proc.db > /dev/null 2>&1;
    echo $?):$(sqlite3 out.m.db "SELECT count(*) FROM events")" "0:$(($(sqlite3 base.db "SELECT count(*) FROM events") * 2))"

# 4. Extreme times: every window and OTLP export computes without overflow (a sanitized build says if not).
cp base.db extreme.db
sqlite3 extreme.db "UPDATE events SET start_ns = 9223372036854775000, duration_ns = 9223372036854775000 WHERE rowid % 2;
    UPDATE events SET start_ns = -9223372036854775000 WHERE rowid % 3 = 0;
    UPDATE graph_list SET start_ns = 9223372036854775807, duration_ns = 9223372036854775807;
    UPDATE windows SET start_ns = -9223372036854775808, end_ns = 9223372036854775807"
cp base.db late.db # every record at the end of time: the window's end, its start plus --to, overflows
sqlite3 late.db "UPDATE events SET start_ns = 9223372036854775000 - rowid, duration_ns = 9223372036854775000"
for w in "--from 0 --to 1000000" "--from 999999999 --to 1000000000" "--graphs 0-5" "--window 1"; do
    # shellcheck disable=SC2086
    for db in extreme late; do check "extreme times: $db: report $w" "$GGPROF" report $db.db $w; done
    expect "extreme times: report $w: exit 0" "$("$GGPROF" report late.db $w > /dev/null 2>&1; echo $?)" 0
done
check "extreme times: export --otlp" "$GGPROF" export extreme.db --otlp out.otlp.jsonl
expect "extreme times: export --otlp: exit 0" "$("$GGPROF" export extreme.db --otlp out.o.jsonl > /dev/null 2>&1; echo $?)" 0

# 5. A JSON profile with one name of 300 MB (300 KB gzip): refused by its bound before it is read into memory.
{ printf '{"version": 3, "records": [{"type": 0, "name": "'
    head -c 300000000 /dev/zero | tr '\0' a
    printf '"}]}\n'; } | gzip -1 > huge.json.gz
( ulimit -v 400000; "$GGPROF" report huge.json.gz > run.stdout 2> run.stderr; echo $? > run.rc )
expect "an over-long JSON name: exit 2, one line naming the file and the limit, in 400 MB" \
    "$(cat run.rc):$(wc -l < run.stderr):$(grep -c "huge.json.gz.*longer than" run.stderr)" "2:1:1"
