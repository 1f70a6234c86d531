# A program without ggml runs normally under the engine, and the report says that no ggml activity was seen.
. "$(dirname "$0")/../lib.sh"

"$GGPROF" record -o "$OUT/true.db" -- /bin/true > "$OUT/true.log" 2>&1
expect "/bin/true exits 0 under record" "$?" 0
"$GGPROF" record -o "$OUT/false.db" -- /bin/false > /dev/null 2>&1
expect "/bin/false's status is passed on" "$?" 1
out=$("$GGPROF" record -o "$OUT/echo.db" -- sh -c 'echo hello; exit 3' 2> /dev/null)
expect "the command's output and status are untouched" "$out:$?" "hello:3"
expect "record says no ggml activity was seen" "$(grep -c 'no ggml activity was seen' "$OUT/true.log")" 1
"$GGPROF" report "$OUT/true.db" > "$OUT/report.txt"
expect "report of an empty trace exits 0" "$?" 0
expect "report says no ggml activity was seen" "$(grep -c '^No ggml activity was seen' "$OUT/report.txt")" 1
expect "nothing recorded" "$(q "$OUT/true.db" "SELECT count(*) FROM records")" 0
