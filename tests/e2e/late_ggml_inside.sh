# ggml inside a library loaded late, patched while another thread computes through it (docs/how-it-works.md,
# "ggml inside the program" and "Patching a running program"). late_ggml_inside (not linked with ggml) starts a
# thread that dlopen()s liba.so, which carries ggml inside it (the fixture's PIC static archives, linked with
# -Bsymbolic: its calls into ggml are direct, as in an addon that bundles ggml), and computes graphs through it; once
# a few are done, the main thread dlopen()s libb.so, whose first call into liba.so's ggml goes through libb.so's PLT:
# there the engine finds ggml inside liba.so and patches its entries while the thread (and its OpenMP worker) runs
# ggml's code. Checked several times (a race shows now and then): the program's output is the same as without
# ggprof, it exits 0, and the graphs on backends made after the patch are recorded op by op with their ticks matched.
. "$(dirname "$0")/../lib.sh"
: "${LLAMA_SRC_DIR:?run through tests/run.sh (tests/fixture.sh)}"
GGML_PIC_DIR=$(bash "$GGPROF_ROOT/tests/fixture.sh" --ggml-pic | sed -n 's/^GGML_PIC_DIR=//p')
expect "the fixture has ggml's PIC static archives (tests/fixture.sh --ggml-pic)" \
    "$([ -f "$GGML_PIC_DIR/libggml-cpu.a" ] && echo yes)" yes

GRAPHS=240 PER_BACKEND=20 THREADS=2 AFTER=3 RUNS=${LATE_GGML_RUNS:-5}
LAYERS=6 # liba.so's graphs: LAYERS x (MUL_MAT, ADD, RMS_NORM, MUL, UNARY)
E=$GGPROF_ROOT/tests/e2e
cc -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,liba.so -o "$OUT/liba.so" \
    "$E/late_ggml_inside_liba.c" -I"$LLAMA_SRC_DIR/ggml/include" "$GGML_PIC_DIR/libggml.a" \
    "$GGML_PIC_DIR/libggml-cpu.a" "$GGML_PIC_DIR/libggml-base.a" -fopenmp -lstdc++ -lm -lpthread 2> "$OUT/cc.log" &&
    cc -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -o "$OUT/libb.so" "$E/late_ggml_inside_libb.c" \
        -I"$LLAMA_SRC_DIR/ggml/include" -L"$OUT" -l:liba.so -Wl,-rpath,'$ORIGIN' 2>> "$OUT/cc.log" &&
    cc -std=c11 -O1 -Wall -Wextra -Werror -o "$OUT/late_ggml_inside" "$E/late_ggml_inside.c" -ldl -lpthread \
        2>> "$OUT/cc.log"
expect "liba.so (ggml inside), libb.so and the program build" "$?" 0
# The scenario holds only if liba.so reaches its ggml directly: no relocation names ggml_barrier or
# ggml_backend_cpu_init (no PLT entry the engine's interposed symbols could take), while both are exported.
expect "liba.so calls its ggml directly (no relocation against ggml_barrier, ggml_backend_cpu_init)" \
    "$(readelf -rW "$OUT/liba.so" | grep -cE ' (ggml_barrier|ggml_backend_cpu_init)( |\+|$)')" 0
expect "liba.so exports ggml's functions" "$(nm -D --defined-only "$OUT/liba.so" | grep -cE ' T (ggml_barrier|ggml_graph_compute|ggml_backend_cpu_init)$')" 3
expect "the program is not linked with ggml" "$(readelf -dW "$OUT/late_ggml_inside" | grep -c 'ggml')" 0

prog=("$OUT/late_ggml_inside" "$OUT/liba.so" "$OUT/libb.so" "$GRAPHS" "$PER_BACKEND" "$THREADS" "$AFTER")
"${prog[@]}" > "$OUT/plain.txt" 2> "$OUT/plain.err"
expect "without ggprof: exits 0" "$?" 0
expect "without ggprof: every graph computed" "$(grep -c '^graph [0-9]*: [0-9a-f]\{16\}$' "$OUT/plain.txt")" "$GRAPHS"

# One recording; each check counts the runs that broke it (the run's number in its files).
bad_status=() bad_output=() bad_timing=() bad_notes=() bad_graphs=() bad_ops=() bad_ticks=()
for r in $(seq 1 "$RUNS"); do
    db=$OUT/run$r.db
    "$GGPROF" record -o "$db" -q -- "${prog[@]}" > "$OUT/run$r.txt" 2> "$OUT/run$r.err"
    [ $? = 0 ] || bad_status+=("$r")
    cmp -s "$OUT/run$r.txt" "$OUT/plain.txt" || bad_output+=("$r")
    # Graphs done when libb.so was called, and when its call (the patching) returned: the thread had computed
    # some, and went on computing, on backends made after the patch.
    before= after=
    read -r before after < <(sed -n 's/^probe: before \([0-9]*\) after \([0-9]*\)$/\1 \2/p' "$OUT/run$r.err")
    [ "${before:-0}" -ge "$AFTER" ] && [ "${after:-$GRAPHS}" -lt $((GRAPHS - PER_BACKEND)) ] || bad_timing+=("$r")
    notes=$(q "$db" "SELECT text FROM notes WHERE text LIKE 'ggml inside %' OR text LIKE 'patched in %'")
    n_patched=$(grep '^patched in liba.so: ' <<< "$notes" | tr ',' '\n' | grep -cE '(: | )(ggml_backend_cpu_init|ggml_barrier|ggml_graph_compute|ggml_backend_cpu_set_abort_callback)$')
    [ "$(grep -c '^ggml inside liba.so (found through its symbol table)$' <<< "$notes")" = 1 ] && [ "$n_patched" = 4 ] ||
        bad_notes+=("$r")
    # Each backend is hooked where it is made: the graphs of those made after the patch are recorded, whole
    # backends' worth, none of those done before libb.so was called.
    n=$(q "$db" "SELECT count(*) FROM graphs")
    [ "$n" -ge "$PER_BACKEND" ] && [ $((n % PER_BACKEND)) = 0 ] && [ "$n" -le $((GRAPHS - ${before:-0})) ] ||
        bad_graphs+=("$r:$n")
    # (RMS_NORM and MUL are fused: one tick, one record)
    [ "$(q "$db" "SELECT count(*) FROM (SELECT r.graph_id FROM records r WHERE r.type = 0 GROUP BY r.graph_id
        HAVING sum(r.name = 'MUL_MAT') = $LAYERS AND sum(r.name = 'UNARY') = $LAYERS
        AND count(*) = (SELECT n_ticks FROM splits s WHERE s.graph_id = r.graph_id))")" = "$n" ] || bad_ops+=("$r")
    [ "$(q "$db" "SELECT count(*) FROM splits WHERE ticks_matched = 1 AND n_ticks = n_expected")" = "$n" ] ||
        bad_ticks+=("$r")
done
expect "record exits 0 in each of $RUNS runs (runs that did not)" "${bad_status[*]}" ""
expect "the program's output is the same as without ggprof (runs that differ)" "${bad_output[*]}" ""
expect "the patching happened while the thread computed (runs where it did not)" "${bad_timing[*]}" ""
expect "the trace says ggml is inside liba.so and its entries were patched (runs that do not)" "${bad_notes[*]}" ""
expect "the graphs of backends made after the patch recorded (runs:graphs where not)" "${bad_graphs[*]}" ""
expect "every recorded graph has its ops, one record per tick (runs where not)" "${bad_ops[*]}" ""
expect "every recorded split has its CPU ticks matched (runs where not)" "${bad_ticks[*]}" ""
# The CPU-trace invariants of tests/lib.sh on the first run.
check_cpu_trace "$OUT/run1.db" "run 1"
