#!/usr/bin/env bash
# Builds (once) everything the end-to-end tests and the demo run against, and prints KEY=VALUE lines.
# usage: tests/fixture.sh           everything `make test` needs (the first time: 30 minutes or more on 2 cores)
#        tests/fixture.sh --demo    only what `make demo` needs: node-llama-cpp's prebuilt CPU libraries, llama.cpp's
#                                   headers from the bundle inside it, mkmodel and the dense model (no compile of
#                                   llama.cpp); prints NODE_PROJECT_DIR and GGUF_DENSE
# Idempotent: each step leaves a stamp in the cache; a second run only prints the keys. The demo's steps are the
# first steps of the full fixture, with the same stamps, so `make demo` then `make test` builds nothing twice.
# Cache: ${GGPROF_CACHE:-$HOME/.cache/ggprof}, keyed by the pinned versions below.
set -euo pipefail
NLC_VERSION=3.21.1            # npm node-llama-cpp: ships llama.cpp v0.4.0 as a git bundle
NLC_VULKAN2=3.22.1            # a second prebuilt Vulkan backend (a later ggml-vulkan) for the device-op tests
LLAMA_NODE_VERSION=1.7.15     # npm @fugood/llama.node: ggml linked into its node addon (no ggml shared library)
LLAMA_TAG=v0.4.0
BUILD_KEY=cpu-openblas-rpc-1  # bump when the CMake options change
STATIC_KEY=static-lto-1       # the static LTO build (step 6c): bump when its CMake options change
CACHE=${GGPROF_CACHE:-$HOME/.cache/ggprof}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_DIR=$CACHE/node-$NLC_VERSION
SRC=$CACHE/llama.cpp-$LLAMA_TAG-src
BUILD=$CACHE/llama.cpp-$LLAMA_TAG-$BUILD_KEY
STATIC_BUILD=$CACHE/llama.cpp-$LLAMA_TAG-$STATIC_KEY
MODELS=$CACHE/models-$LLAMA_TAG
JOBS=${GGPROF_JOBS:-$(nproc)}

log() { printf 'fixture: %s\n' "$*" >&2; }
die() { printf 'fixture: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
    '') DEMO=0 ;;
    --demo) DEMO=1 ;;
    *) printf 'fixture: %s\n' "'$1' is not an option (--demo, or none)" >&2; exit 2 ;;
esac
# 1. Debian packages.
bash "$ROOT/tests/deps.sh" $([ $DEMO = 1 ] && echo --demo)

# npm_project DIR STAMP NAME PACKAGE@VERSION...: installs the packages (once: the stamp DIR/STAMP) into a project
# of their own, nothing compiled or downloaded by node-llama-cpp itself. A project installed again with more
# packages (the same STAMP's wider set) keeps what it had.
npm_project() {
    local d=$1 stamp=$2 name=$3
    shift 3
    [ -f "$d/$stamp" ] && return 0
    log "installing $* into $d"
    mkdir -p "$d"
    printf '{"name":"%s","private":true,"type":"module"}\n' "$name" > "$d/package.json"
    (cd "$d" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund --omit=optional "$@" >&2)
    touch "$d/$stamp"
}

# 2. node-llama-cpp with its prebuilt linux-x64 libraries: the CPU ones (the demo; .stamp-cpu), and the Vulkan ones
# too for the tests (.stamp: all of them; the CUDA ones are 159 MB+).
NODE_PKGS=("node-llama-cpp@$NLC_VERSION" "@node-llama-cpp/linux-x64@$NLC_VERSION")
if [ $DEMO = 1 ]; then
    [ -f "$NODE_DIR/.stamp" ] || npm_project "$NODE_DIR" .stamp-cpu ggprof-node-fixture "${NODE_PKGS[@]}"
else
    npm_project "$NODE_DIR" .stamp ggprof-node-fixture "${NODE_PKGS[@]}" "@node-llama-cpp/linux-x64-vulkan@$NLC_VERSION"
fi
BUNDLE=$NODE_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$BUNDLE" ] || die "missing $BUNDLE (node-llama-cpp@$NLC_VERSION changed layout?)"
# The package's own prebuilt libggml-base.so: what mkmodel links (step 4), so the models need no llama.cpp build.
PREBUILT=$NODE_DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[ -f "$PREBUILT/libggml-base.so" ] || die "missing $PREBUILT/libggml-base.so (@node-llama-cpp/linux-x64 changed layout?)"

# 3. llama.cpp source from the bundle (the demo needs its gguf.h and its vocabulary).
if [ ! -f "$SRC/.stamp" ]; then
    log "cloning llama.cpp $LLAMA_TAG from the npm bundle"
    rm -rf "$SRC"
    git clone -q "$BUNDLE" "$SRC" 2>/dev/null
    touch "$SRC/.stamp"
fi

# 4. mkmodel (our C program on the public gguf.h API, linked against the prebuilt libggml-base.so) and the models.
MKMODEL=$MODELS/mkmodel
if [ ! -x "$MKMODEL" ] || [ "$ROOT/samples/mkmodel.c" -nt "$MKMODEL" ]; then
    mkdir -p "$MODELS"
    cc -std=c11 -O2 -Wall -Wextra -Werror -o "$MKMODEL" "$ROOT/samples/mkmodel.c" \
        -I"$SRC/ggml/include" -L"$PREBUILT" -Wl,-rpath,"$PREBUILT" -lggml-base -lm
    rm -f "$MODELS"/*.gguf
fi
VOCAB=$SRC/models/ggml-vocab-llama-spm.gguf
DENSE=$MODELS/dense-llama-512x4.gguf
MOE=$MODELS/moe-llama-8x2.gguf
[ -f "$DENSE" ] || "$MKMODEL" --vocab "$VOCAB" --n-embd 512 --n-layer 4 --out "$DENSE" >&2
if [ $DEMO = 1 ]; then
    echo "NODE_PROJECT_DIR=$NODE_DIR"
    echo "GGUF_DENSE=$DENSE"
    exit 0
fi
[ -f "$MOE" ] || "$MKMODEL" --vocab "$VOCAB" --n-embd 256 --n-layer 2 --n-expert 8 --n-expert-used 2 --out "$MOE" >&2

# The rest is the tests' alone.
# 5. node-llama-cpp@3.22.1 with its prebuilt Vulkan libraries: the second ggml-vulkan the device-op attribution is
# checked on (tests/e2e/vulkan_timestamps.sh).
NODE_VK2_DIR=$CACHE/node-$NLC_VULKAN2-vulkan
npm_project "$NODE_VK2_DIR" .stamp ggprof-node-vulkan2 "node-llama-cpp@$NLC_VULKAN2" "@node-llama-cpp/linux-x64@$NLC_VULKAN2" \
    "@node-llama-cpp/linux-x64-vulkan@$NLC_VULKAN2"
# 5b. @fugood/llama.node with its prebuilt linux-x64 addon: a node program that carries ggml inside its addon.
LLAMA_NODE_DIR=$CACHE/llama-node-$LLAMA_NODE_VERSION
npm_project "$LLAMA_NODE_DIR" .stamp ggprof-llama-node "@fugood/llama.node@$LLAMA_NODE_VERSION" \
    "@fugood/node-llama-linux-x64@$LLAMA_NODE_VERSION"
# 6. llama.cpp build: CPU + OpenBLAS + RPC, shared libraries (so the engine interposes across them).
if [ ! -f "$BUILD/.stamp" ]; then
    log "building llama.cpp $LLAMA_TAG in $BUILD (about 25 minutes on 2 cores)"
    cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
        -DGGML_BLAS=ON -DGGML_BLAS_VENDOR=OpenBLAS -DGGML_RPC=ON \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
    cmake --build "$BUILD" -j "$JOBS" --target llama-completion llama-bench test-backend-ops ggml-rpc-server >&2
    touch "$BUILD/.stamp"
fi
# 6b. llama-server, the server the capture-window tests profile (added to builds made before it was a target:
# the same options with the server on, so only its own files compile).
if [ ! -f "$BUILD/.stamp-server" ]; then
    log "building llama-server $LLAMA_TAG in $BUILD (a few minutes on 2 cores)"
    cmake -S "$SRC" -B "$BUILD" -DLLAMA_BUILD_SERVER=ON >&2
    cmake --build "$BUILD" -j "$JOBS" --target llama-server >&2
    touch "$BUILD/.stamp-server"
fi
BIN=$BUILD/bin
for t in llama-completion llama-bench test-backend-ops ggml-rpc-server llama-server; do
    [ -x "$BIN/$t" ] || die "build did not produce $BIN/$t"
done
# 6c. The same llama.cpp static with LTO (-march=native): programs with ggml inside them, no libggml*.so to interpose.
if [ ! -f "$STATIC_BUILD/.stamp" ]; then
    log "building static LTO llama.cpp $LLAMA_TAG in $STATIC_BUILD (about 20 minutes on 2 cores)"
    cmake -S "$SRC" -B "$STATIC_BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_LTO=ON \
        -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
    cmake --build "$STATIC_BUILD" -j "$JOBS" --target llama-completion llama-bench llama-server >&2
    touch "$STATIC_BUILD/.stamp"
fi
STATIC_BIN=$STATIC_BUILD/bin
STATIC_LIB=$STATIC_BUILD/ggml/src
for t in llama-completion llama-bench llama-server; do
    [ -x "$STATIC_BIN/$t" ] || die "static build did not produce $STATIC_BIN/$t"
done
# 6d. samples/static_graph.c, whole-program LTO with those archives: ggml without a scheduler. static_graph exports
# its symbols (-rdynamic, as programs that load plugins do), so LTO keeps ggml's API functions; static_graph-inlined
# does not, and LTO inlines or drops most of them; static_graph-stripped is that one without .symtab.
STATIC_SAMPLES=$STATIC_BUILD/ggprof-samples
STATIC_SAMPLE=$STATIC_SAMPLES/static_graph
if [ ! -x "$STATIC_SAMPLE" ] || [ ! -x "$STATIC_SAMPLE-inlined" ] || [ ! -x "$STATIC_SAMPLE-stripped" ] \
    || [ "$ROOT/samples/static_graph.c" -nt "$STATIC_SAMPLE" ] || [ "$STATIC_BUILD/.stamp" -nt "$STATIC_SAMPLE" ]; then
    log "linking samples/static_graph.c with the static LTO ggml into $STATIC_SAMPLES"
    mkdir -p "$STATIC_SAMPLES"
    # the sample alone with -Werror; ggml's own code warns in the LTO link (GCC 12, AVX-512 intrinsics)
    cc -std=c11 -O3 -DNDEBUG -flto -fno-fat-lto-objects -Wall -Wextra -Werror -I"$SRC/ggml/include" \
        -c -o "$STATIC_SAMPLES/static_graph.o" "$ROOT/samples/static_graph.c"
    for v in inlined exported; do
        cc -O3 -flto="$JOBS" $([ $v = exported ] && echo -rdynamic) -o "$STATIC_SAMPLE-$v.tmp" \
            "$STATIC_SAMPLES/static_graph.o" "$STATIC_LIB/libggml.a" "$STATIC_LIB/libggml-cpu.a" \
            "$STATIC_LIB/libggml-base.a" -ldl -lstdc++ -lm -fopenmp -lpthread
    done
    strip --strip-all -o "$STATIC_SAMPLE-stripped" "$STATIC_SAMPLE-inlined.tmp"
    mv "$STATIC_SAMPLE-inlined.tmp" "$STATIC_SAMPLE-inlined"
    mv "$STATIC_SAMPLE-exported.tmp" "$STATIC_SAMPLE"
fi

echo "LLAMA_SRC_DIR=$SRC"
echo "LLAMA_BIN_DIR=$BIN"
echo "GGUF_DENSE=$DENSE"
echo "GGUF_MOE=$MOE"
echo "NODE_PROJECT_DIR=$NODE_DIR"
echo "NODE_VULKAN2_DIR=$NODE_VK2_DIR"
echo "STATIC_BIN_DIR=$STATIC_BIN"
echo "STATIC_SAMPLE=$STATIC_SAMPLE"
echo "STATIC_SAMPLE_INLINED=$STATIC_SAMPLE-inlined"
echo "STATIC_SAMPLE_STRIPPED=$STATIC_SAMPLE-stripped"
echo "LLAMA_NODE_DIR=$LLAMA_NODE_DIR"
