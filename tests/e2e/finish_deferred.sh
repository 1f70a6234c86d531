# record's finish in the background (docs/how-it-works.md, "Finishing in the background"): a burst of records
# (ring_overload.c, millions a second) leaves the end more to store than about a second's work; record exits with
# the workload's status and a background process finishes the trace, holding OUT.lock until the database and the
# JSON are whole. Checked: record is back before the trace is (the lock held, the old OUT gone), the database being
# built is valid whenever it is read, every reader waits with one line, and the trace and its JSON hold every
# record offered; -q, --wait, a second record of the same output, a background process killed.
. "$(dirname "$0")/../lib.sh"
unset GGPROF_RECORD_WAIT # lib.sh's default for the other tests

build_ggml_program ring_overload
db="$OUT/burst.db"
json="$OUT/burst.json.gz"
rm -f "$OUT"/burst.* "$OUT"/.burst.*
n_ops=4000
n_graphs=50 # 4,000 OP records a graph and as many barrier and plan records: about 10 MB of spill
# An old trace at OUT goes as record defers: no reader takes it for the new one.
echo "an older trace" > "$db"
# GGPROF_RECORD_DEFER_S=0: deferred whatever is left, however fast this machine stores it.
GGPROF_RECORD_DEFER_S=0 "$GGPROF" record -o "$db" --ring-kib 65536 -- \
    sh -c "'$OUT/ring_overload' $n_ops $n_graphs && exit 3" > "$OUT/out" 2> "$OUT/err"
expect "record exits with the workload's status" "$?" 3
held=$(flock -n "$db.lock" true 2> /dev/null && echo free || echo held)
old=$([ -e "$db" ] && echo there || echo gone)
"$GGPROF" report "$db" > "$OUT/report.txt" 2> "$OUT/report.err" &
reader=$!
"$GGPROF" top-ops "$json" > "$OUT/top.txt" 2> "$OUT/top.err" & # the JSON's reader waits too
json_reader=$!
line=$(grep -c "^ggprof: record: finishing the trace in the background (pid [0-9]*): '$db' and '$json' are complete when it exits" "$OUT/err")
expect "record says it in one line" "$line" 1
expect "and nothing else (the rest goes to OUT.log)" "$(wc -l < "$OUT/err")" 1
pid=$(sed -n 's/.*in the background (pid \([0-9]*\)).*/\1/p' "$OUT/err")
expect "record exits before the trace is finished: OUT.lock is held" "$held" held
expect "the old trace went as record deferred" "$old" gone
expect "OUT.lock names the background process" "$(cat "$db.lock" 2> /dev/null)" "$pid"
expect "OUT.lock and OUT.log are private (mode 0600)" "$(stat -c %a "$db.lock" "$db.log" 2> /dev/null | tr '\n' ' ')" "600 600 "
# While it builds: the hidden database beside OUT (schema/outfile.c) is valid whenever it is read (each batch a
# transaction; the reader waits out a commit), and OUT is absent or whole.
reads=0
bad=0
while [ -e "$db.lock" ]; do
    for tmp in "$OUT"/.burst.db.ggprof-*; do
        [ -f "$tmp" ] || continue
        case "$tmp" in *-journal) continue ;; esac
        r=$(sqlite3 -cmd ".timeout 5000" "file:$tmp?mode=ro" "PRAGMA integrity_check" 2>&1)
        case "$r" in
            ok) reads=$((reads + 1)) ;;
            *"unable to open"*|*"no such file"*) ;; # renamed over OUT meanwhile
            *) bad=$((bad + 1)) && echo "# $r" ;;
        esac
    done
    sleep 0.1
done
expect_ge "the database was read while it was built" "$reads" 1
expect "and was valid each time (PRAGMA integrity_check)" "$bad" 0
wait "$reader"
expect "report waited and succeeded" "$?" 0
expect "report said it waited, once" "$(grep -c "^ggprof: report: waiting for '$db' to be finished by record (pid $pid)\$" \
    "$OUT/report.err")" 1
wait "$json_reader"
expect "top-ops on the JSON waited and succeeded" "$?" 0
expect "top-ops said it waited, once" "$(grep -c "^ggprof: top-ops: waiting for '$json' to be finished by record (pid $pid)\$" \
    "$OUT/top.err")" 1
expect "top-ops read the whole JSON" "$(grep -c "SCALE" "$OUT/top.txt")" 1
expect "report read the new trace" "$(grep -c "OP  ] backend 0 SCALE .* count=$((n_ops * n_graphs)) " "$OUT/report.txt")" 1
expect "every OP record offered is in the database" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0")" \
    $((n_ops * n_graphs))
expect "a graph row per graph computed" "$(q "$db" "SELECT count(*) FROM graphs")" "$n_graphs"
expect "nothing was dropped" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
expect "the workload's status is in the trace" "$(q "$db" "SELECT value FROM meta WHERE key = 'exit_status'")" 3
gzip -t "$json" 2> /dev/null
expect "the JSON is a whole gzip file" "$?" 0
check_json "$json" "$db" "background finish"
expect "OUT.lock is gone" "$([ -e "$db.lock" ] && echo there || echo gone)" gone
expect "the spill is gone" "$([ -e "$db.spill" ] && echo there || echo gone)" gone
expect "no hidden file is left" "$(find "$OUT" -name '.burst.*' | wc -l)" 0
expect "OUT.log has record's summary line" "$(grep -c "^ggprof: record: [0-9]* records, $n_graphs graphs, .* in '$db' and '$json'\$" \
    "$db.log")" 1

# -q: not a line. A second record of the same output waits for the first's background finish, then replaces it.
GGPROF_RECORD_DEFER_S=0 "$GGPROF" record -q -o "$db" --ring-kib 65536 -- "$OUT/ring_overload" $n_ops 25 > /dev/null 2> "$OUT/err.q"
expect "-q: record prints nothing" "$(wc -c < "$OUT/err.q")" 0
expect "-q: deferred all the same" "$(flock -n "$db.lock" true 2> /dev/null && echo free || echo held)" held
"$GGPROF" record --wait -o "$db" -- "$OUT/ring_overload" 50 3 > /dev/null 2> "$OUT/err.second"
expect "a second record of OUT waits for the first" "$(grep -c "^ggprof: record: waiting for '$db' to be finished by record (pid [0-9]*)\$" \
    "$OUT/err.second")" 1
expect "--wait: no background finish" "$(grep -c 'in the background' "$OUT/err.second")" 0
expect "--wait: the trace is whole as record exits" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0")" 150

# --wait however much is left; GGPROF_RECORD_WAIT=1 alike.
GGPROF_RECORD_DEFER_S=0 GGPROF_RECORD_WAIT=1 "$GGPROF" record -o "$db" --ring-kib 65536 -- "$OUT/ring_overload" $n_ops 10 \
    > /dev/null 2> "$OUT/err.wait"
expect "GGPROF_RECORD_WAIT=1: no background finish" "$(grep -c 'in the background' "$OUT/err.wait")" 0
expect "GGPROF_RECORD_WAIT=1: the trace is whole as record exits" \
    "$(sqlite3 "$db" "SELECT count(*) FROM events WHERE type = 0")" $((n_ops * 10))
expect "GGPROF_RECORD_WAIT=1: no lock" "$([ -e "$db.lock" ] && echo there || echo gone)" gone

# The background process killed: readers say so instead of waiting; the next record takes the output over.
GGPROF_RECORD_DEFER_S=0 "$GGPROF" record -o "$db" --ring-kib 65536 -- "$OUT/ring_overload" $n_ops $n_graphs > /dev/null \
    2> "$OUT/err.kill"
pid=$(sed -n 's/.*in the background (pid \([0-9]*\)).*/\1/p' "$OUT/err.kill")
kill -9 "$pid" 2> /dev/null
expect "the background process was killed while it built" "$?" 0
while kill -0 "$pid" 2> /dev/null; do sleep 0.05; done
"$GGPROF" report "$db" > /dev/null 2> "$OUT/report.kill"
expect "report fails: no trace" "$?" 2
expect "report says the finish was cut short" "$(grep -c "^ggprof: report: warning: 'ggprof record' (pid $pid) ended before '$db' was finished (killed?); see '$db.log'\$" \
    "$OUT/report.kill")" 1
"$GGPROF" record --wait -o "$db" -- "$OUT/ring_overload" 50 2 > /dev/null 2> "$OUT/err.after"
expect "the next record of OUT succeeds" "$?" 0
expect "with the new trace" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0")" 100
expect "and no lock or log left of the killed one" "$(ls "$db.lock" "$db.log" 2> /dev/null | wc -l)" 0
