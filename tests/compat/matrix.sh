#!/usr/bin/env bash
# The compatibility matrix: a short generation under `ggprof record` on every real ggml build of
# tests/compat/builds.sh (node-llama-cpp's prebuilt CPU libraries of eight releases, Debian sid's llama.cpp-tools
# in a chroot, and its whisper-cli transcribing a tone with tests/make_whisper_model.py's tiny model, whose row
# also checks the whole run's accounting) and of tests/fixture.sh that carry ggml inside (the static LTO
# llama.cpp, @fugood/llama.node), and the same under GGML_PROFILE. For each: graphs, splits, CPU op records, every CPU split's ticks
# matched, report and top-ops working. Prints TAP lines and writes the matrix (docs/compatibility.md quotes it)
# to $OUT/matrix.md. Needs GGUF_DENSE (tests/fixture.sh). usage: tests/compat/matrix.sh [BUILD...]
. "$(dirname "$0")/../lib.sh"
: "${GGUF_DENSE:?run through tests/run.sh (it needs the model of tests/fixture.sh)}"
SCRIPT="$GGPROF_ROOT/samples/node/script.mjs"
matrix="$OUT/matrix.md"
printf '| build | llama.cpp | ggml | graph | split | op: CPU splits timed | tick model | BLAS | GGML_PROFILE | memory |\n' > "$matrix"
printf '|---|---|---|---|---|---|---|---|---|---|\n' >> "$matrix"

if ! builds=$(bash "$GGPROF_ROOT/tests/compat/builds.sh" "$@"); then
    not_ok "builds" "tests/compat/builds.sh failed (npm or debootstrap)"
    exit 0
fi

# The trace's notes that say memory is off, and why: functions the ggml found lacks (probe.c), or ggml found after
# its buffers were allocated (memory.c).
MEMORY_OFF="(text LIKE '%without%memory records%' OR text LIKE '%without%tensor placement%' OR text LIKE 'memory off in %')"

# The checks every build gets on its trace; prints the matrix cells graph|split|op|model.
check_build() { # NAME DB [OPS]: OPS the ops the trace must have (default: a llama's MUL_MAT RMS_NORM ROPE)
    local n=$1 db=$2 ops=${3:-MUL_MAT RMS_NORM ROPE}
    expect_ge "$n: graphs recorded" "$(q "$db" "SELECT count(*) FROM graphs")" 1
    expect_ge "$n: splits recorded" "$(q "$db" "SELECT count(*) FROM splits")" 1
    expect_ge "$n: CPU op records" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0")" 1
    check_cpu_trace "$db" "$n"
    for op in $ops; do
        expect_ge "$n: has $op" "$(q "$db" "SELECT count(*) FROM records WHERE type = 0 AND name = '$op'")" 1
    done
    local rep
    rep=$("$GGPROF" report "$db" 2>&1)
    expect "$n: report prints the op summary" "$(grep -c 'MUL_MAT' <<< "$rep" | sed 's/^[1-9][0-9]*$/yes/')" yes
    expect "$n: report does not say no activity" "$(grep -c 'No ggml activity' <<< "$rep")" 0
    expect "$n: top-ops ranks MUL_MAT" "$("$GGPROF" top-ops "$db" --format csv 2>&1 | grep -c '^MUL_MAT' | sed 's/^[1-9][0-9]*$/yes/')" yes
    # memory: the model's, the KV cache's and the compute buffers, each compute buffer's plan; or the notes say which
    # functions this ggml lacks (probe.c: "... profiling goes on without memory records / tensor placement")
    local kinds planned computes missing
    kinds=$(q "$db" "SELECT group_concat(kind, ' ') FROM (SELECT DISTINCT kind FROM buffers WHERE size > 0
        AND kind != 'other' ORDER BY kind)")
    computes=$(q "$db" "SELECT count(*) FROM buffers WHERE kind = 'compute' AND size > 0")
    planned=$(q "$db" "SELECT count(DISTINCT buffer_id) FROM placements p WHERE flags & 32 AND buffer_id IN
        (SELECT buffer_id FROM buffers b WHERE b.pid = p.pid AND kind = 'compute')")
    missing=$(q "$db" "SELECT count(*) FROM notes WHERE $MEMORY_OFF")
    expect "$n: memory: weights, KV cache and compute buffers, or a note naming what is missing" \
        "$([ "$kinds" = "compute kv weights" ] || [ "${missing:-0}" -ge 1 ] && echo yes)" yes
    expect "$n: memory: every compute buffer's plan read, or a note naming what is missing" \
        "$([ "${computes:-0}" -ge 1 ] && [ "$planned" = "$computes" ] || [ "${missing:-0}" -ge 1 ] && echo yes)" yes
}

# The matrix's memory cell: the kinds recorded and the compute buffers planned, or what the notes say is missing.
mem_cell() { # DB
    local missing
    missing=$(q "$1" "SELECT text FROM notes WHERE $MEMORY_OFF ORDER BY text LIKE 'memory off%' DESC LIMIT 1" |
        sed -n -e 's/.* has no \(.*\): profiling goes on without.*/off: no \1/p' -e 's/^memory off in [^:]*: .*found at its first graph.*/off: found after its buffers/p')
    [ -n "$missing" ] && { echo "$missing"; return; }
    q "$1" "SELECT group_concat(kind, ', ') || ', ' || (SELECT count(DISTINCT buffer_id) FROM placements WHERE flags & 32)
        || ' planned' FROM (SELECT DISTINCT kind FROM buffers WHERE size > 0 AND kind != 'other' ORDER BY kind)"
}

cell() { # DB SQL
    q "$1" "$2"
}

profile_ok() { # JSON: the GGML_PROFILE output parses and has records
    node -e 'const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        process.stdout.write(d.version === 3 && d.records.length > 0 ? "yes" : "no")' "$1" 2> /dev/null || echo no
}

row() { # NAME LLAMA DB BLAS PROFILE
    local db=$3
    local ver graphs splits cpu matched model
    ver=$(cell "$db" "SELECT ggml_version FROM processes LIMIT 1")
    graphs=$(cell "$db" "SELECT count(*) FROM graphs")
    splits=$(cell "$db" "SELECT count(*) FROM splits")
    cpu=$(cell "$db" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid AND b.sched_id = s.sched_id
        AND b.id = s.backend_id WHERE b.device_type = 0")
    matched=$(cell "$db" "SELECT count(*) FROM splits WHERE ticks_matched = 1")
    model=$(cell "$db" "SELECT text FROM notes WHERE text LIKE 'CPU tick model %' ORDER BY rowid DESC LIMIT 1" |
        sed -n "s/^CPU tick model '\([^']*\)'.*/\1/p")
    printf '| %s | %s | %s | %s graphs | %s splits | %s of %s | %s | %s | %s | %s |\n' "$1" "$2" "${ver:-?}" "$graphs" \
        "$splits" "$matched" "$cpu" "${model:-?}" "$4" "$5" "$(mem_cell "$db")" >> "$matrix"
}

run_nlc() { # NAME DIR
    local n=$1 d=$2 llama
    llama=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$d/node_modules/node-llama-cpp/llama/binariesGithubRelease.json")
    cp "$SCRIPT" "$d/ggprof-script.mjs"
    (cd "$d" && "$GGPROF" record -o "$OUT/$n.db" -- node ggprof-script.mjs "$GGUF_DENSE" 4) > "$OUT/$n.log" 2>&1
    expect "$n: record exits with node's status" "$?" 0
    check_build "$n" "$OUT/$n.db"
    (cd "$d" && LD_PRELOAD="$GGPROF_PRELOAD" ASAN_OPTIONS="$WORKLOAD_ASAN" GGML_PROFILE="$OUT/$n.profile.json" node ggprof-script.mjs "$GGUF_DENSE" 4) \
        > "$OUT/$n.profile.log" 2>&1
    local prof
    prof=$(profile_ok "$OUT/$n.profile.json")
    expect "$n: GGML_PROFILE writes a version-3 profile with records" "$prof" yes
    row "$n" "$llama" "$OUT/$n.db" "not in the package" "$prof"
}

# proc_mount DIR: mounts /proc in the chroot DIR unless it is; prints 1 if it mounted it (for proc_umount).
proc_mount() {
    mountpoint -q "$1/proc" && { echo 0; return 0; }
    mount -t proc proc "$1/proc" && echo 1
}
proc_umount() { # DIR MOUNTED
    [ "$2" = 1 ] && umount "$1/proc"
}

# Debian sid: ggprof itself runs inside the chroot (its libraries are Debian's too), from a copy under /opt/ggprof;
# /proc is mounted for the run and unmounted after.
run_sid() { # NAME DIR
    local n=$1 c=$2
    mkdir -p "$c/opt/ggprof/bin" "$c/opt/ggprof/lib" "$c/tmp/ggprof-compat"
    cp "$GGPROF" "$c/opt/ggprof/bin/ggprof"
    cp "$GGPROF_LIB" "$c/opt/ggprof/lib/libggprof.so"
    cp "$GGUF_DENSE" "$c/tmp/ggprof-compat/model.gguf"
    local mounted
    mounted=$(proc_mount "$c") || { not_ok "$n: mount /proc in the chroot" "mount failed"; return; }
    local t=/tmp/ggprof-compat prompt
    prompt=$(printf 'word %.0s' $(seq 40))
    chroot "$c" /opt/ggprof/bin/ggprof record -o $t/run.db -- llama-completion -m $t/model.gguf -p "Hello" -n 4 -t 2 \
        -no-cnv > "$OUT/$n.log" 2>&1
    expect "$n: record exits with llama-completion's status" "$?" 0
    # A prompt of 32+ tokens sends the big matrix products to Debian's BLAS backend (-nr: no AMX or repacked copy of
    # the weights, which BLAS cannot read, on a CPU whose ggml variant has them).
    chroot "$c" /opt/ggprof/bin/ggprof record -o $t/blas.db -- llama-completion -m $t/model.gguf -p "$prompt" -n 1 \
        -t 2 -no-cnv -nr > "$OUT/$n.blas.log" 2>&1
    chroot "$c" env LD_PRELOAD=/opt/ggprof/lib/libggprof.so GGML_PROFILE=$t/profile.json llama-completion \
        -m $t/model.gguf -p "Hello" -n 4 -t 2 -no-cnv > "$OUT/$n.profile.log" 2>&1
    proc_umount "$c" "$mounted"
    cp "$c$t/run.db" "$OUT/$n.db"
    cp "$c$t/blas.db" "$OUT/$n.blas.db"
    cp "$c$t/profile.json" "$OUT/$n.profile.json" 2> /dev/null
    check_build "$n" "$OUT/$n.db"
    local blas_splits blas
    blas_splits=$(q "$OUT/$n.blas.db" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid
        AND b.sched_id = s.sched_id AND b.id = s.backend_id WHERE b.name = 'BLAS'")
    expect_ge "$n: BLAS splits recorded" "$blas_splits" 1
    expect_ge "$n: the trace says why BLAS ops are not timed node by node" \
        "$(q "$OUT/$n.blas.db" "SELECT count(*) FROM notes WHERE text LIKE '%ggml_graph_view%node-by-node%'")" 1
    blas="split level ($blas_splits splits; no ggml_graph_view)"
    local prof
    prof=$(profile_ok "$OUT/$n.profile.json")
    expect "$n: GGML_PROFILE writes a version-3 profile with records" "$prof" yes
    row "$n" "Debian $(chroot "$c" dpkg-query -W -f='${Version}' llama.cpp-tools)" "$OUT/$n.db" "$blas" "$prof"
}

# Debian sid's whisper-cli (whisper.cpp, not llama.cpp: an encoder and a decoder, its own loader) in the same chroot,
# on the tiny random model and 2 s tone of tests/make_whisper_model.py: the trace as every build's (its ops: a
# convolution, layer norms, no RMS_NORM or ROPE), and the whole run accounted for (docs/findings.md, "Accounting",
# lib.sh's acc and whole): the categories add up to the wall, which is record's fork to exit within 1%; no
# llama_decode, so loading and context_setup are inferred from ggml's buffers and there are no prompt, generation
# or time to first token.
run_whisper() { # NAME DIR
    local n=$1 c=$2 files model wav mounted t=/tmp/ggprof-compat
    files=$(python3 "$GGPROF_ROOT/tests/make_whisper_model.py") || { not_ok "$n: make the tiny whisper model" "failed"; return; }
    model=$(sed -n 's/^WHISPER_MODEL=//p' <<< "$files")
    wav=$(sed -n 's/^WHISPER_WAV=//p' <<< "$files")
    mkdir -p "$c/opt/ggprof/bin" "$c/opt/ggprof/lib" "$c$t"
    cp "$GGPROF" "$c/opt/ggprof/bin/ggprof"
    cp "$GGPROF_LIB" "$c/opt/ggprof/lib/libggprof.so"
    cp "$model" "$c$t/whisper.bin"
    cp "$wav" "$c$t/tone.wav"
    rm -f "$c$t/whisper.db" "$c$t/whisper.profile.json"
    mounted=$(proc_mount "$c") || { not_ok "$n: mount /proc in the chroot" "mount failed"; return; }
    chroot "$c" /opt/ggprof/bin/ggprof record -o $t/whisper.db -- whisper-cli -m $t/whisper.bin -f $t/tone.wav -t 2 \
        > "$OUT/$n.log" 2>&1
    expect "$n: record exits with whisper-cli's status" "$?" 0
    chroot "$c" env LD_PRELOAD=/opt/ggprof/lib/libggprof.so GGML_PROFILE=$t/whisper.profile.json whisper-cli \
        -m $t/whisper.bin -f $t/tone.wav -t 2 > "$OUT/$n.profile.log" 2>&1
    proc_umount "$c" "$mounted"
    expect "$n: whisper-cli transcribed (a segment printed)" "$(grep -c '^\[00:00:00' "$OUT/$n.log" | sed 's/^[1-9][0-9]*$/yes/')" yes
    local db=$OUT/$n.db
    cp "$c$t/whisper.db" "$db"
    cp "$c$t/whisper.profile.json" "$OUT/$n.profile.json" 2> /dev/null
    check_build "$n" "$db" "MUL_MAT NORM IM2COL GET_ROWS"
    local su lo cs cpu gb gr pt ttft blas
    read -r su lo cs cpu gb gr pt ttft <<< "$(acc "$db" categories.startup categories.loading \
        categories.context_setup categories.compute.CPU categories.graph_build \
        phases.generation_runs phases.prompt_tokens ttft)"
    whole "$db" "$n"
    expect_ge "$n: startup measured" "$su" 1
    expect_ge "$n: loading inferred (the weights' buffer to the first context buffer)" "$lo" 1
    expect_ge "$n: context_setup inferred (to the first graph)" "$cs" 1
    expect_ge "$n: compute.CPU measured" "$cpu" 1
    expect "$n: no llama_decode: no graph_build, prompt, generation or time to first token" "$gb $gr $pt $ttft" "0 0 0 None"
    blas=$(q "$db" "SELECT count(*) FROM splits s JOIN backends b ON b.pid = s.pid AND b.sched_id = s.sched_id
        AND b.id = s.backend_id WHERE b.name = 'BLAS'")
    local prof
    prof=$(profile_ok "$OUT/$n.profile.json")
    expect "$n: GGML_PROFILE writes a version-3 profile with records" "$prof" yes
    row "$n" "whisper.cpp $(chroot "$c" dpkg-query -W -f='${Version}' whisper.cpp-tools)" "$db" \
        "split level ($blas splits; no ggml_graph_view)" "$prof"
}

# Builds with ggml inside the program (tests/fixture.sh): the fixture's llama.cpp linked statically with LTO, and
# @fugood/llama.node, whose node addon links ggml 0.18. How each was reached is in its trace's notes.
run_inside() { # NAME LLAMA CMD...
    local n=$1 llama=$2
    shift 2
    "$GGPROF" record -o "$OUT/$n.db" -- "$@" > "$OUT/$n.log" 2>&1
    expect "$n: record exits with the program's status" "$?" 0
    check_build "$n" "$OUT/$n.db"
    LD_PRELOAD="$GGPROF_PRELOAD" ASAN_OPTIONS="$WORKLOAD_ASAN" GGML_PROFILE="$OUT/$n.profile.json" "$@" \
        > "$OUT/$n.profile.log" 2>&1
    local prof
    prof=$(profile_ok "$OUT/$n.profile.json")
    expect "$n: GGML_PROFILE writes a version-3 profile with records" "$prof" yes
    row "$n" "$llama" "$OUT/$n.db" "not built" "$prof"
}
wanted_build() { # NAME: no build named on the command line, or this one
    [ ${#ARGS[@]} -eq 0 ] && return 0
    local b
    for b in "${ARGS[@]}"; do [ "$b" = "$1" ] && return 0; done
    return 1
}
ARGS=("$@")

while read -r name kind dir; do
    case "$kind" in
        nlc) run_nlc "$name" "$dir" ;;
        # A sanitized ggprof needs its build machine's sanitizer runtime, which the sid chroot does not have.
        deb) if [ -n "${GGPROF_SAN:-}" ]; then echo "# $name: not run in a sanitized build (no runtime in the chroot)"
             else run_sid "$name" "$dir"; run_whisper "$name-whisper" "$dir"; fi ;;
    esac
done <<< "$builds"
if [ -n "${STATIC_BIN_DIR:-}" ] && wanted_build static-lto; then
    run_inside static-lto "v0.4.0, static LTO" "$STATIC_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p "Hello" -n 4 -t 2 \
        -no-cnv --no-warmup
fi
if [ -n "${LLAMA_NODE_DIR:-}" ] && wanted_build llama-node-1.7.15; then
    run_inside llama-node-1.7.15 "llama.node (ggml inside)" node "$GGPROF_ROOT/tests/e2e/llama_node_run.mjs" \
        "$LLAMA_NODE_DIR" "$GGUF_DENSE" 4 2
fi
sed 's/^/# /' "$matrix"
