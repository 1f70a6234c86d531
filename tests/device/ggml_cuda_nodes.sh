#!/usr/bin/env bash
# Device check (one H200, CUDA 13): ggml-cuda's kernels joined to their graph nodes, CUDA graphs on and off.
# ggml-cuda is built on the device machine itself, for its architecture only (sm_90), from the trimmed llama.cpp
# v0.4.0 source that tests/device/build.sh packs into build-device/ (node-llama-cpp's prebuilt libggml-cuda.so is
# 159 MB: over the carry limit). Two steps, each well inside one 10-minute call:
#   run(command="bash tests/device/ggml_cuda_nodes.sh build", carry=["build-device"], timeout_s=600)
#   run(command="bash tests/device/ggml_cuda_nodes.sh check", carry=["build-device"], timeout_s=300)
# (the build stays on the machine between calls while it is warm: build-device-llama/ is an ignored path).
# check records llama-completion -ngl 99 on a 4-layer model (samples/mkmodel.c) with CUDA graphs (ggml's
# default) and with GGML_CUDA_DISABLE_GRAPHS=1, and asserts: kernels inside splits are joined to a node of their
# split (>= 95% of device time), each kernel's name fits its node's op, graph kernels (graph_node != 0) are joined
# too, device OP records hold all the joined time, fused groups are named, top-ops lists CUDA0 MUL_MAT. Prints
# ok/not ok lines and "N passed, N failed"; traces under $OUT/ggml_cuda_nodes/.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B="$ROOT/build-device"
L="$ROOT/build-device-llama"
cd "$ROOT"
export GGPROF="$B/bin/ggprof" GGPROF_ROOT="$ROOT" GGPROF_TEST_OUT="${OUT:-/tmp/ggprof-device}"
mkdir -p "$GGPROF_TEST_OUT"

build() {
    [ -f "$B/llama-src.tar.xz" ] || { echo "not ok - build-device/llama-src.tar.xz missing: run tests/device/build.sh here"; return 1; }
    command -v nvcc > /dev/null || export PATH="/usr/local/cuda/bin:$PATH"
    command -v nvcc > /dev/null || { echo "not ok - no nvcc on this machine: ggml-cuda cannot be built here"; return 1; }
    mkdir -p "$L/src" && tar -xJf "$B/llama-src.tar.xz" -C "$L/src"
    cmake -S "$L/src" -B "$L/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF > "$L/cmake.log" 2>&1 ||
        { tail -20 "$L/cmake.log"; return 1; }
    cmake --build "$L/build" -j "$(nproc)" --target llama-completion > "$L/build.log" 2>&1 ||
        { tail -30 "$L/build.log"; return 1; }
    cc -std=c11 -O2 -o "$L/mkmodel" "$ROOT/samples/mkmodel.c" -I"$L/src/ggml/include" -L"$L/build/bin" \
        -Wl,-rpath,"$L/build/bin" -lggml-base -lm &&
        "$L/mkmodel" --vocab "$L/src/models/ggml-vocab-llama-spm.gguf" --n-embd 512 --n-layer 4 \
            --out "$L/dense.gguf" > /dev/null || return 1
    echo "ok - ggml-cuda built for sm_90: $(ls "$L/build/bin" | paste -sd' ')"
}

check() {
    [ -x "$L/build/bin/llama-completion" ] && [ -f "$L/dense.gguf" ] ||
        { echo "not ok - no ggml-cuda build here: run 'bash tests/device/ggml_cuda_nodes.sh build' first"; return 1; }
    . "$ROOT/tests/lib.sh"
    echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)"
    if ! ldconfig -p 2> /dev/null | grep -q 'libcupti\.so\.13 ' && [ ! -e /usr/local/cuda/lib64/libcupti.so.13 ]; then
        export GGPROF_CUPTI_LIB="$B/deps/cupti/libcupti.so.13"
    fi
    case_run() { # LABEL [VAR=VALUE...]
        local l=$1 db="$OUT/$1.db"
        shift
        env "$@" timeout 240 "$GGPROF" record --ring-kib 4096 -o "$db" -- "$L/build/bin/llama-completion" \
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
            printf('%.3f', sum(duration_ns) / 1e6) || ' ms' FROM records WHERE timing = 4 GROUP BY 1 ORDER BY sum(duration_ns) DESC"
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
