# A recording is its user's alone: the ring and the spill while it runs, the trace after, are new files of mode
# 0600 with names no one can guess; nothing planted in their place (a link, another user's file) is followed or
# written into; the engine attaches only to a ring that is private to its user.
. "$(dirname "$0")/../lib.sh"
build_ggml_program fork_exec
P="$OUT/fork_exec"
cd "$OUT" || exit 1

# What the workload sees while it is recorded: its ring (GGPROF_RING) and the spill beside the output.
look='r=$GGPROF_RING; echo "ring $(basename "$r") $(stat -c %a "$r") spill $(stat -c %a "$0.spill")"
      if [ "$(id -u)" = 0 ]; then runuser -u nobody -- cat "$r" > /dev/null 2>&1 && echo "nobody read it"; fi
      exec "$1" compute 3 private'
"$GGPROF" record -q -o "$OUT/p.db" -- sh -c "$look" "$OUT/p.db" "$P" > "$OUT/p.out" 2> "$OUT/p.err"
expect "record runs" "$?" 0
read -r _ ring rmode _ smode < "$OUT/p.out"
expect "the ring's name has 64 random bits" "$(echo "$ring" | grep -cE '^ggprof-record-[0-9]+-[0-9a-f]{16}\.ring$')" 1
expect "the ring and the spill are mode 0600 while recording" "$rmode:$smode" "600:600"
if [ "$(id -u)" = 0 ]; then
    expect "another user cannot read the ring" "$(grep -c 'nobody read it' "$OUT/p.out")" 0
else
    echo "# not root: the read by another user is not tried"
fi
expect "the trace and its JSON are mode 0600" "$(stat -c %a "$OUT/p.db" "$OUT/p.json.gz" | paste -sd:)" "600:600"
expect "the ring and the spill are gone after" "$(ls /dev/shm/"$ring" "$OUT/p.db.spill" 2> /dev/null | wc -l)" 0
"$GGPROF" record -q -o "$OUT/p2.db" -- sh -c 'basename "$GGPROF_RING"' > "$OUT/p2.out" 2>&1
expect "two recordings, two ring names" "$([ "$(cat "$OUT/p2.out")" != "$ring" ] && echo differ)" differ

# A link planted at the output is replaced, never followed: its target is untouched.
echo "keep me" > "$OUT/victim"
ln -sf "$OUT/victim" "$OUT/linked.db"
"$GGPROF" record -q -o "$OUT/linked.db" -- "$P" compute 2 linked > /dev/null 2>&1
expect "a link at the output: record runs" "$?" 0
expect "... the link's target is untouched" "$(cat "$OUT/victim")" "keep me"
expect "... the output is a new file of its own" "$([ -f "$OUT/linked.db" ] && [ ! -L "$OUT/linked.db" ] && echo file)" file
expect "... and holds the trace" "$(q "$OUT/linked.db" "SELECT count(*) FROM graphs")" 2

# A link planted where the spill goes: refused with one line, target untouched, nothing run.
ln -sf "$OUT/victim" "$OUT/spilled.db.spill"
"$GGPROF" record -o "$OUT/spilled.db" -- "$P" compute 2 spilled > "$OUT/spilled.out" 2> "$OUT/spilled.err"
expect "a link at the spill: a usage error" "$?" 2
expect "... one line naming it" "$(wc -l < "$OUT/spilled.err"):$(grep -c 'spilled.db.spill' "$OUT/spilled.err")" "1:1"
expect "... the link's target is untouched" "$(cat "$OUT/victim")" "keep me"

if [ "$(id -u)" = 0 ]; then
    # A spill left by another user (a shared folder): not written into, not emptied.
    echo "theirs" > "$OUT/other.db.spill"
    chown nobody "$OUT/other.db.spill"
    "$GGPROF" record -o "$OUT/other.db" -- "$P" compute 2 other > /dev/null 2> "$OUT/other.err"
    expect "another user's spill: a usage error" "$?" 2
    expect "... saying whose it is" "$(grep -c "other.db.spill' belongs to another user" "$OUT/other.err")" 1
    expect "... left as it was" "$(cat "$OUT/other.db.spill")" theirs
else
    echo "# not root: another user's spill is not tried"
fi

# Every file a record and an export write is the user's alone, whatever the umask: the flight recorder's segments
# while it runs, the trace, its JSON, each export format.
umask 022
look='echo "seg $(stat -c %a "$0.spill.0")"; exec "$1" compute 3 seg'
"$GGPROF" record -q --max-mb 1 -o "$OUT/f.db" -- sh -c "$look" "$OUT/f.db" "$P" > "$OUT/f.out" 2> "$OUT/f.err"
expect "the flight recorder's segment is mode 0600 while recording" "$(head -n 1 "$OUT/f.out")" "seg 600"
"$GGPROF" export "$OUT/f.db" --json "$OUT/e.json.gz" --text "$OUT/e.txt" --chrome "$OUT/e.chrome.json" \
    --html "$OUT/e.html" --otlp "$OUT/e.otlp" --roofline "$OUT/e.svg" --test-file "$OUT/e.cases" \
    > /dev/null 2> "$OUT/e.err"
expect "export writes every format" "$?" 0
expect "every file record and export wrote is mode 0600" "$(stat -c '%n %a' "$OUT"/f.db "$OUT"/f.json.gz "$OUT"/e.* |
    grep -vc ' 600$')" 0
expect "... all seven exports are there" "$(ls "$OUT"/e.* | grep -vc '\.err$')" 7
expect "... and nothing else is left beside them (no hidden file)" "$(ls -A "$OUT" | grep -c '^\.[ef]\.')" 0

# A segment's name taken before the recording (another user's 0666 file, linked where they can read it; a link to
# our own file): replaced by a new file, never written into; nothing reaches what they point at.
printf theirs > "$OUT/g.db.spill.0"
chmod 666 "$OUT/g.db.spill.0"
ln "$OUT/g.db.spill.0" "$OUT/g.their-copy"
[ "$(id -u)" = 0 ] && chown nobody "$OUT/g.db.spill.0"
ln -sf "$OUT/victim" "$OUT/g.db.spill.1"
"$GGPROF" record -q --max-mb 1 -o "$OUT/g.db" -- sh -c 'stat -c %a "$0.spill.0"; exec "$1" compute 3 planted' \
    "$OUT/g.db" "$P" > "$OUT/g.out" 2> "$OUT/g.err"
expect "a planted segment: record runs" "$?" 0
expect "... the segment it writes is a new file, mode 0600" "$(head -n 1 "$OUT/g.out")" 600
expect "... the planted file got nothing of the trace" "$(cat "$OUT/g.their-copy")" theirs
expect "... the linked file is untouched" "$(cat "$OUT/victim")" "keep me"
expect "... and the trace is whole" "$(q "$OUT/g.db" "SELECT count(*) FROM graphs")" 3

# Links planted at the named outputs (the JSON beside the trace, an export): replaced, never followed.
ln -sf "$OUT/victim" "$OUT/h.json.gz"
ln -sf "$OUT/victim" "$OUT/h.chrome.json"
"$GGPROF" record -q -o "$OUT/h.db" -- "$P" compute 2 linked > /dev/null 2>&1 &&
    "$GGPROF" export "$OUT/h.db" --chrome "$OUT/h.chrome.json" > /dev/null 2>&1
expect "links at the JSON and at an export: both written" "$?" 0
expect "... the links' target is untouched" "$(cat "$OUT/victim")" "keep me"
expect "... each output is a new file of mode 0600" "$(stat -c '%F %a' "$OUT/h.json.gz" "$OUT/h.chrome.json" | sort -u)" \
    "regular file 600"

# The engine attaches only to a private ring of its user: a readable one, or a link, turns profiling off (one line)
# and the program runs as it would.
"$GGPROF" record -q -o "$OUT/open.db" -- sh -c 'chmod 644 "$GGPROF_RING"; exec "$1" compute 2 open' sh "$P" \
    > /dev/null 2> "$OUT/open.err"
expect "a ring others can read: the program exits 0" "$?" 0
expect "... and the engine says it will not write there" "$(grep -c 'profiling off: .* is not a private file' "$OUT/open.err")" 1
expect "... so nothing reaches it" "$(q "$OUT/open.db" "SELECT count(*) FROM graphs")" 0
"$GGPROF" record -q -o "$OUT/link.db" -- sh -c 'ln -s "$GGPROF_RING" "$0"; GGPROF_RING=$0 exec "$1" compute 2 link' \
    "$OUT/ring.link" "$P" > /dev/null 2> "$OUT/link.err"
expect "a ring reached through a link: the program exits 0, profiling off" "$?:$(grep -c 'profiling off' "$OUT/link.err")" "0:1"
