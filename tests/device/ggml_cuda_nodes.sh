#!/usr/bin/env bash
# Device check (one H200, CUDA 13): ggml-cuda's kernels joined to their graph nodes, CUDA graphs on and off.
# ggml-cuda is built for sm_90 only, without its flash-attention kernels (GGML_CUDA_FA=OFF: their template
# instances are most of the build; llama.cpp then runs attention as separate ops), from llama.cpp v0.4.0's source:
# node-llama-cpp's prebuilt libggml-cuda.so is 159 MB, over the carry limit. Two steps:
#   build   where nvcc is: here (the toolkit in /usr/local/cuda; 2 cores, about an hour) or on the device (16 cores),
#           from LLAMA_SRC_DIR or the trimmed source tests/device/build.sh packs (build-device/llama-src.tar.xz).
#           It stages what check runs in build-device-llama/run/, about 31 MiB: llama-completion and its shared
#           libraries (gzip), samples/mkmodel.c and the vocabulary it makes the 4-layer model from there. Carry it
#           with build-device.
#   check   on the device: run(command="bash tests/device/ggml_cuda_nodes.sh check",
#           carry=["build-device", "build-device-llama/run"], timeout_s=300)
# check records llama-completion -ngl 99 with CUDA graphs (ggml's default) and with GGML_CUDA_DISABLE_GRAPHS=1, and
# asserts: kernels inside splits are joined to a node of their split (>= 95% of device time), each kernel's name
# fits its node's op, graph kernels (graph_node != 0) are joined too, device OP records hold all the joined time,
# fused groups are named, top-ops lists CUDA0 MUL_MAT. Prints ok/not ok lines and "N passed, N failed"; traces
# under $OUT.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B="$ROOT/build-device"
L="$ROOT/build-device-llama"
cd "$ROOT"
export GGPROF="$B/bin/ggprof" GGPROF_ROOT="$ROOT" GGPROF_TEST_OUT="${OUT:-/tmp/ggprof-device}"
mkdir -p "$GGPROF_TEST_OUT"

build() {
    local src=${LLAMA_SRC_DIR:-$L/src} lb=${GGPROF_CUDA_BUILD:-$L/build} run=$L/run
    if [ ! -f "$src/CMakeLists.txt" ]; then
        [ -f "$B/llama-src.tar.xz" ] || { echo "not ok - no llama.cpp source: set LLAMA_SRC_DIR or run tests/device/build.sh"; return 1; }
        mkdir -p "$src" && tar -xJf "$B/llama-src.tar.xz" -C "$src"
    fi
    command -v nvcc > /dev/null || export PATH="/usr/local/cuda/bin:$PATH"
    command -v nvcc > /dev/null || { echo "not ok - no nvcc on this machine: ggml-cuda cannot be built here"; return 1; }
    mkdir -p "$lb"
    # The driver's libcuda.so.1, which libggml-cuda.so needs, is only where a GPU is: without it the executable links
    # with its symbols left to the loader.
    cmake -S "$src" -B "$lb" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=ON -DGGML_CUDA_FA=OFF \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF \
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined > "$lb/ggprof-cmake.log" 2>&1 ||
        { tail -20 "$lb/ggprof-cmake.log"; return 1; }
    cmake --build "$lb" -j "$(nproc)" --target llama-completion > "$lb/ggprof-build.log" 2>&1 ||
        { tail -30 "$lb/ggprof-build.log"; return 1; }
    # What check runs, each library once under the name the loader asks for (its SONAME), found there through
    # LD_LIBRARY_PATH (the build's RUNPATH names this machine's folders), packed with gzip (57 MiB: over the carry limit
    # with build-device as it is); the model is made there, from the vocabulary, by mkmodel (90 MiB as a file).
    local stage=$L/stage
    rm -rf "$run" "$stage" && mkdir -p "$run" "$stage"
    cp -L "$lb/bin/llama-completion" "$stage/"
    for f in "$lb"/bin/lib*.so; do
        so=$(objdump -p "$f" | awk '/SONAME/ { print $2 }')
        cp -L "$f" "$stage/${so:-$(basename "$f")}"
    done
    strip --strip-unneeded "$stage"/* 2> /dev/null
    tar -C "$stage" -czf "$run/bin.tar.gz" .
    rm -rf "$stage"
    cc -std=c11 -O2 -o "$run/mkmodel" "$ROOT/samples/mkmodel.c" -I"$src/ggml/include" -L"$lb/bin" -lggml-base -lm &&
        cp "$src/models/ggml-vocab-llama-spm.gguf" "$run/" || return 1
    echo "ok - ggml-cuda built for sm_90: $(ls "$run" | paste -sd' '), $(du -sh "$run" | cut -f1)"
}

check() {
    local run=$L/run
    [ -f "$run/bin.tar.gz" ] && [ -x "$run/mkmodel" ] ||
        { echo "not ok - no ggml-cuda build here: run 'bash tests/device/ggml_cuda_nodes.sh build' and carry $run"; return 1; }
    . "$ROOT/tests/lib.sh"
    echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)"
    local bin=$L/bin
    rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" -xzf "$run/bin.tar.gz" ||
        { echo "not ok - cannot unpack $run/bin.tar.gz"; return 1; }
    export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
    done
    local missing
    missing=$(ldd "$bin/llama-completion" "$bin"/libggml-cuda.so* 2> /dev/null | awk '/not found/ { print $1 }' | sort -u | paste -sd' ')
    expect "the CUDA runtime libraries ggml-cuda needs are here" "${missing:-none missing}" "none missing"
    LD_LIBRARY_PATH="$bin" "$run/mkmodel" --vocab "$run/ggml-vocab-llama-spm.gguf" --n-embd 512 --n-layer 4 \
        --out "$L/dense.gguf" > /dev/null
    expect "the 4-layer test model is made" "$?" 0
    if ! ldconfig -p 2> /dev/null | grep -q 'libcupti\.so\.13 ' && [ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]; then
        export GGPROF_CUPTI_LIB="$B/deps/cupti/libcupti.so.13"
    fi
    case_run() { # LABEL [VAR=VALUE...]
        local l=$1 db="$OUT/$1.db"
        shift
        env "$@" timeout 240 "$GGPROF" record --ring-kib 4096 -o "$db" -- "$bin/llama-completion" \
            -m "$L/dense.gguf" -p "The history of the printing press" -n 32 -ngl 99 --no-warmup -no-cnv -s 1 \
            > "$OUT/$l.out" 2> "$OUT/$l.err"
        expect "$l: llama-completion exits 0 under record" "$?" 0
        expect_ge "$l: CUDA kernels recorded" "$(q "$db" "SELECT count(*) FROM kernels WHERE api = 'cuda'")" 100
        expect_ge "$l: >= 95% of the device time in splits joined to a node" "$(q "$db" "SELECT CAST(1000 *
            sum(CASE WHEN node_index >= 0 THEN duration_ns ELSE 0 END) / sum(duration_ns) AS INTEGER) FROM kernels
            WHERE graph_id IS NOT NULL")" 950
        expect "$l: each joined kernel lies in its split's node range" "$(q "$db" "SELECT count(*) FROM kernels k
            JOIN split_list s ON s.pid = k.pid AND s.graph_id = k.graph_id AND s.split_id = k.split_id
            WHERE k.node_index >= 0 AND (k.node_index < s.node_start OR k.node_index >= s.node_start + s.n_nodes
            OR k.op IS NULL)")" 0
        # ggml-cuda's kernel names for the ops of a llama layer (demangled: 'void mul_mat_vec_q<...>(...)')
        expect "$l: each kernel's name fits its node's op" "$(q "$db" "SELECT count(*) || ' ' ||
            COALESCE(group_concat(DISTINCT op || '/' || substr(name, 1, 40)), '') FROM kernels
            WHERE node_index >= 0 AND NOT (
              (op IN ('MUL_MAT', 'MUL_MAT_ID') AND (name LIKE '%mul_mat%' OR name LIKE '%gemv%' OR name LIKE '%gemm%'
                OR name LIKE '%mmq%' OR name LIKE '%mmvq%' OR name LIKE '%quantize%' OR name LIKE '%convert%' OR name LIKE '%cutlass%'))
              OR (op = 'RMS_NORM' AND name LIKE '%rms_norm%') OR (op = 'ROPE' AND name LIKE '%rope%')
              OR (op = 'FLASH_ATTN_EXT' AND (name LIKE '%flash_attn%' OR name LIKE '%fattn%'))
              OR (op = 'GLU' AND (name LIKE '%glu%' OR name LIKE '%swiglu%')) OR (op = 'ADD' AND (name LIKE '%add%' OR name LIKE '%bin_bcast%'))
              OR (op = 'MUL' AND name LIKE '%bin_bcast%') OR (op IN ('CPY', 'SET_ROWS', 'GET_ROWS') AND (name LIKE '%cpy%' OR name LIKE '%rows%'))
              OR (op = 'SOFT_MAX' AND name LIKE '%soft_max%'))")" "0 "
        expect "$l: device OP records hold all the joined kernels' time" "$(q "$db" "SELECT
            (SELECT sum(duration_ns) FROM records WHERE timing = 4) = (SELECT sum(duration_ns) FROM kernels
             WHERE node_index >= 0 AND graph_id IS NOT NULL)")" 1
        "$GGPROF" top-ops "$db" --format csv > "$OUT/$l-top-ops.csv"
        expect "$l: top-ops lists CUDA0 MUL_MAT" "$(grep -c '^MUL_MAT,CUDA0,' "$OUT/$l-top-ops.csv")" 1
        q "$db" "SELECT '# $l: ' || text FROM notes"
        q "$db" "SELECT '#   ' || COALESCE(extra, name) || ': ' || count(*) || ' records, ' ||
            printf('%.3f', sum(duration_ns) / 1e6) || ' ms' FROM records WHERE timing = 4 GROUP BY COALESCE(extra, name) ORDER BY sum(duration_ns) DESC"
    }
    case_run cuda_graphs
    expect_ge "cuda_graphs: kernels replayed from CUDA graphs, joined to their node" "$(q "$OUT/cuda_graphs.db" "SELECT
        count(*) FROM kernels WHERE graph_node != 0 AND node_index >= 0")" 1
    expect_ge "cuda_graphs: fused groups named (RMS_NORM+MUL...)" "$(q "$OUT/cuda_graphs.db" "SELECT count(*) FROM records
        WHERE timing = 4 AND extra GLOB '*+*'")" 1
    case_run no_graphs GGML_CUDA_DISABLE_GRAPHS=1
    expect "no_graphs: no graph kernels" "$(q "$OUT/no_graphs.db" "SELECT count(*) FROM kernels WHERE graph_node != 0")" 0
    expect "the same ops with and without CUDA graphs" "$(q "$OUT/cuda_graphs.db" "SELECT group_concat(op, ' ') FROM
        (SELECT DISTINCT COALESCE(extra, name) AS op FROM records WHERE timing = 4 ORDER BY 1)")" \
        "$(q "$OUT/no_graphs.db" "SELECT group_concat(op, ' ') FROM (SELECT DISTINCT COALESCE(extra, name) AS op
        FROM records WHERE timing = 4 ORDER BY 1)")"
}

step=${1:-check}
log="$GGPROF_TEST_OUT/ggml_cuda_$step.txt"
case $step in
    build) build 2>&1 | tee "$log" ;;
    check) check 2>&1 | tee "$log" ;;
    *) echo "usage: tests/device/ggml_cuda_nodes.sh build|check" >&2; exit 2 ;;
esac
. "$ROOT/tests/tally.sh"
tally "$log"
