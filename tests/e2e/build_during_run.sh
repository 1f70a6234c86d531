# The database and the JSON built while the workload runs (record's builder thread, collector/spill.c's
# ggprof_spill_build): the trace holds records before the workload ends, and what record writes at the end is what
# a build from nothing writes (the JSON byte for byte as `export --json` writes it from the database; every record
# there once, in the order drained). The builder takes a round only while a CPU is spare: with every CPU kept busy,
# nothing is stored until the workload ends, and then everything is.
. "$(dirname "$0")/../lib.sh"

build_ggml_program rate_workload "$GGPROF_ROOT/tests/bench/rate_workload.c"
db="$OUT/during.db"
rm -f "$db" "$OUT/during.json.gz"
# 20k records a second for 4 s on 1 MiB slots: a drain, and a round for the builder, about every 0.3 s (handed over
# whether or not a CPU is idle: the machine running the tests may be busy)
GGPROF_RECORD_BUILDER=1 "$GGPROF" record --ring-kib 1024 -o "$db" -- "$OUT/rate_workload" 500 20000 4 > "$OUT/out" 2> "$OUT/err" &
rec=$!
grown=0
for _ in $(seq 1 35); do # while the workload runs (4 s): the hidden database beside OUT (schema/outfile.c)
    sleep 0.1
    for tmp in "$OUT"/.during.db.ggprof-*; do
        [ -f "$tmp" ] || continue
        n=$(sqlite3 -cmd ".timeout 2000" "file:$tmp?mode=ro" "SELECT count(*) FROM events" 2> /dev/null)
        [ "${n:-0}" -gt 0 ] && grown=$n
    done
    [ "$grown" -gt 0 ] && break
done
wait "$rec"
expect "record succeeds" "$?" 0
expect_ge "records were in the database while the workload ran" "$grown" 1
expect "nothing was dropped" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
graphs=$(awk '{ print $2 }' "$OUT/out")
expect "a graph row per graph computed" "$(q "$db" "SELECT count(*) FROM graphs")" "$graphs"
expect "each graph's 500 ops, once" "$(q "$db" "SELECT count(*) FROM (SELECT graph_id, count(*) c FROM events
    WHERE type = 0 GROUP BY graph_id) WHERE c != 500")" 0
expect "records in drained order: one thread's graphs never go back" "$(q "$db" "SELECT count(*) FROM events a
    JOIN events b ON b.rowid = a.rowid + 1 WHERE b.graph_id < a.graph_id")" 0
"$GGPROF" export "$db" --json "$OUT/whole.json" > /dev/null 2>&1
expect "record's JSON is the JSON of its database, byte for byte" \
    "$(zcat "$OUT/during.json.gz" | cmp - "$OUT/whole.json" > /dev/null && echo same)" same
expect "no file of the build is left beside the trace" \
    "$(ls -a "$OUT" | grep -c -e '^\.during' -e '\.records$' -e '\.spill$')" 0

# No CPU spare (1 MiB slots, drained about every 0.4 s): no round is handed to the builder, the hidden database holds
# no record while the workload runs, and the end stores them all. (With GGPROF_RECORD_BUILDER=1 the builder stores
# some 11-35k of them meanwhile, at nice 19.) busy_case NAME SPINNERS SPIN_CPUS [PIN]: SPINNERS CPU-bound shells (on
# SPIN_CPUS, or anywhere when empty) beside record, which runs under `taskset -c PIN` when PIN is given; the
# spinners and record join the cgroups whose cgroup.procs files JOIN lists, if any.
JOIN=()
busy_case() {
    local name=$1 db="$OUT/$1.db" pin=() rec rc seen=0 looked=0 n graphs f p
    [ -n "${4:-}" ] && pin=(taskset -c "$4")
    rm -f "$db" "$OUT/$name.json.gz"
    spinners_start "$2" "$3"
    for f in "${JOIN[@]}"; do for p in "${SPINNERS[@]}"; do echo "$p" > "$f"; done; done
    # shellcheck disable=SC2016 # the inner shell's $$ and $@
    [ "${#JOIN[@]}" -gt 0 ] && pin=(sh -c 'for f in $JOIN_FILES; do echo $$ > "$f"; done; exec "$@"' sh "${pin[@]}")
    JOIN_FILES="${JOIN[*]}" "${pin[@]}" "$GGPROF" record --ring-kib 1024 -o "$db" -- "$OUT/rate_workload" 500 20000 3 > "$OUT/out" 2> "$OUT/err" &
    rec=$!
    for _ in $(seq 1 25); do # while the workload runs (3 s): a count read while record's child is still there
        sleep 0.1
        for tmp in "$OUT"/."$name".db.ggprof-*; do
            [ -f "$tmp" ] || continue
            n=$(sqlite3 -cmd ".timeout 2000" "file:$tmp?mode=ro" "SELECT count(*) FROM events" 2> /dev/null)
            pgrep -P "$rec" > /dev/null || break 2
            looked=$((looked + 1))
            [ "${n:-0}" -gt "$seen" ] && seen=$n
        done
    done
    wait "$rec"
    rc=$?
    spinners_stop
    expect "$name: record succeeds" "$rc" 0
    expect_ge "$name: the hidden database was there to look at" "$looked" 1
    expect "$name: no record stored while no CPU was spare" "$seen" 0
    graphs=$(awk '{ print $2 }' "$OUT/out")
    expect "$name: nothing was dropped" "$(q "$db" "SELECT value FROM meta WHERE key = 'dropped_records'")" 0
    expect "$name: every graph's 500 ops stored at the end" "$(q "$db" "SELECT count(*) FROM events WHERE type = 0")" \
        "$((graphs * 500))"
}
# every CPU busy
busy_case busy "$(nproc)" ""
# record and its workload on CPU 0, kept busy; the other CPUs idle, but not theirs (the sum over all CPUs would say
# spare: the builder would run on CPU 0)
if [ "$(nproc)" -ge 2 ]; then
    busy_case pinned 1 0 0
fi
# record and its workload in a cgroup whose quota is one CPU, used up by a spinner there; the other CPUs idle, but the
# quota lets the cgroup have none of them (/proc/stat alone would say spare: the builder would run on the quota). The
# cgroup is v2's where the cpu controller is there, else v1's cpu controller with cpuacct (Docker's --cpus on either).
quota_cgroup() { # makes the cgroups, their cgroup.procs files in JOIN, their directories in QUOTA_DIRS
    local v2=/sys/fs/cgroup name="ggprof-test-$$"
    QUOTA_DIRS=()
    if grep -qw cpu "$v2/cgroup.controllers" 2> /dev/null; then
        grep -qw cpu "$v2/cgroup.subtree_control" || echo +cpu > "$v2/cgroup.subtree_control" || return 1
        mkdir "$v2/$name" && QUOTA_DIRS=("$v2/$name") && echo "100000 100000" > "$v2/$name/cpu.max" || return 1
    elif [ -d "$v2/cpu" ] && [ -d "$v2/cpuacct" ]; then
        mkdir "$v2/cpu/$name" && QUOTA_DIRS=("$v2/cpu/$name") && mkdir "$v2/cpuacct/$name" &&
            QUOTA_DIRS+=("$v2/cpuacct/$name") && echo 100000 > "$v2/cpu/$name/cpu.cfs_period_us" &&
            echo 100000 > "$v2/cpu/$name/cpu.cfs_quota_us" || return 1
    else
        return 1
    fi
    JOIN=("${QUOTA_DIRS[@]/%//cgroup.procs}")
}
if [ "$(nproc)" -ge 2 ] && quota_cgroup 2> /dev/null; then
    busy_case quota 1 ""
    expect "quota: the trace says the workload had one CPU's quota" \
        "$(q "$OUT/quota.db" "SELECT cpu_quota FROM processes_time ORDER BY pid LIMIT 1")" 1.0
    JOIN=()
else
    echo "# build_during_run: quota case not run: no cgroup with a CPU quota can be made here (root and a cpu controller)"
fi
for d in "${QUOTA_DIRS[@]}"; do rmdir "$d" 2> /dev/null; done
