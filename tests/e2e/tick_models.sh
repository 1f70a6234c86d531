# The CPU tick models (kernels/cpu/tick_model.c) on the fixture's ggml: the model that explains ggml's ticks is
# kept and named in the trace; a compute the program's own abort callback stops after two ticks is explained by
# no model, so its split is marked unmatched, gets no op records, and the trace notes the ticks seen, the count
# expected and the first node where the models part. With GGML_CPU_DISABLE_FUSION=1 the fused pair ticks twice.
. "$(dirname "$0")/../lib.sh"

build_ggml_program tick_models

db="$OUT/ticks.db"
"$GGPROF" record -o "$db" -- "$OUT/tick_models" > "$OUT/stdout" 2> "$OUT/stderr"
expect "record runs it" "$?:$(tail -n 1 "$OUT/stdout")" "0:ok"
# Nodes: RMS_NORM, MUL (fused with it), RESHAPE, SCALE, TRANSPOSE, CONT, SOFT_MAX: 4 ticks under 'fused'.
expect "every compute but the aborted one matched, 4 ticks each" "$(q "$db" "SELECT group_concat(graph_id || ':' ||
    ticks_matched || ':' || n_ticks || '/' || n_expected, ' ') FROM (SELECT * FROM splits ORDER BY graph_id)")" \
    "0:1:4/4 1:1:4/4 2:1:4/4 3:1:4/4 4:0:2/4 5:1:4/4"
expect "the aborted compute has no op records" "$(q "$db" "SELECT count(*) FROM events WHERE graph_id = 4 AND type = 0")" 0
expect "the fused pair is one record: RMS_NORM with its MUL" "$(q "$db" "SELECT DISTINCT name || '+' || fused_index
    FROM events WHERE type = 0 AND name = 'RMS_NORM'")" "RMS_NORM+1"
expect "the trace names the model that read the splits" "$(q "$db" "SELECT count(*) FROM notes
    WHERE text LIKE 'CPU tick model ''fused'': the first CPU split''s 4 ticks matched it'")" 1
expect "the unmatched split is noted, with where the models part" "$(q "$db" "SELECT text FROM notes
    WHERE text LIKE 'CPU split 0 of graph 4:%'")" \
    "CPU split 0 of graph 4: ggml ticked 2 times where tick model 'fused' expects 4, so its ops are not timed; the tick models part first at node 1 (MUL 'normed_w': 'fused' and 'flagged' decide apart)"
expect "record's closing line counts the splits timed" "$(grep -c '5 of 6 CPU splits timed op by op (tick model .fused.)' \
    "$OUT/stderr")" 1
expect "the note is in record's closing lines too" "$(grep -c "pid [0-9]*: CPU split 0 of graph 4: ggml ticked 2 times" \
    "$OUT/stderr")" 1
rep=$("$GGPROF" report "$db")
expect "report counts the unmatched split" "$(grep -c 'CPU split 0 of graph 4' <<< "$rep")" 1

GGML_CPU_DISABLE_FUSION=1 "$GGPROF" record -q -o "$OUT/nofusion.db" -- "$OUT/tick_models" > /dev/null 2>&1
expect "without fusion the pair ticks twice: 5 ticks" "$(q "$OUT/nofusion.db" "SELECT DISTINCT ticks_matched || ':' ||
    n_ticks || '/' || n_expected FROM splits WHERE graph_id != 4")" "1:5/5"
