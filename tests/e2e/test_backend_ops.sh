# ggml's own op tests under record: test-backend-ops computes each case on its backend and on the CPU through
# ggml_backend_graph_compute, outside any scheduler, and sets no abort callback of its own.
. "$(dirname "$0")/../lib.sh"

db="$OUT/tbo.db"
timeout 300 "$GGPROF" record -o "$db" -- "$LLAMA_BIN_DIR/test-backend-ops" test -o RMS_NORM -b CPU > "$OUT/log" 2>&1
expect "test-backend-ops passes under record" "$?:$(grep -c 'backends passed' "$OUT/log")" "0:1"
expect_ge "graphs computed outside a scheduler recorded" "$(q "$db" "SELECT count(*) FROM graphs WHERE sched_id = 0")" 10
expect "every split has its ticks matched" "$(q "$db" "SELECT count(*) FROM splits WHERE ticks_matched IS NOT 1")" 0
expect_ge "RMS_NORM timed" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0 AND name = 'RMS_NORM'")" 10
