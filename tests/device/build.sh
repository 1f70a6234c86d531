#!/usr/bin/env bash
# Builds build-device/ here, for the device machine (which fetches nothing): ggprof, libggprof.so,
# libggprof-cupti.so, the CUDA and OpenCL samples, and copies of the shared libraries ggprof needs that a CUDA
# image may lack. tests/device/cuda_cupti.sh runs from it there. usage: bash tests/device/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build-device
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/cupti.h" ]; then
    echo "build: no $CUDA_HOME/include/cupti.h: the CUDA toolkit is needed" >&2
    exit 1
fi
make --no-print-directory BUILD=$B all $B/samples/cuda_kernels >&2
# The OpenCL sample, for a device whose image has an OpenCL driver (optional there).
cc -std=c11 -Wall -Wextra -Werror -O2 -o $B/samples/opencl_kernels samples/opencl/kernels.c -lOpenCL -lm

# Copies, used there only for what the device's own loader cannot find (cuda_cupti.sh checks with ldd).
# libc, libm and the loader stay the device's: they are in every image, and mixing them breaks.
rm -rf $B/deps && mkdir -p $B/deps/cupti
for f in $B/bin/ggprof $B/samples/opencl_kernels; do
    ldd "$f" | awk '/=> \// { print $3 }'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
        libc.so* | libm.so* | ld-linux* | libpthread.so* | libdl.so* | librt.so* | libgcc_s.so* | libstdc++.so*) ;;
        *) cp -L "$lib" $B/deps/ ;;
    esac
done
# CUPTI: the device machine's CUDA 13 image has its own; this copy is used only if it does not.
cp -L "$CUDA_HOME/lib64/libcupti.so.13" $B/deps/cupti/
# llama.cpp v0.4.0's source, trimmed to what llama-completion needs, for ggml_cuda_nodes.sh to build ggml-cuda on
# the device (for its architecture only: node-llama-cpp's prebuilt libggml-cuda.so is over the carry limit).
SRC=${LLAMA_SRC_DIR:-${GGPROF_CACHE:-$HOME/.cache/ggprof}/llama.cpp-v0.4.0-src}
if [ -f "$SRC/CMakeLists.txt" ]; then
    tar -C "$SRC" -cJf $B/llama-src.tar.xz CMakeLists.txt cmake ggml src include common vendor licenses LICENSE \
        tools app models/ggml-vocab-llama-spm.gguf
else
    echo "build: no llama.cpp source at $SRC (tests/fixture.sh makes it): ggml_cuda_nodes.sh will not run" >&2
fi

need=$(for f in $B/bin/ggprof $B/lib/*.so $B/samples/* $B/deps/*.so*; do
    objdump -T "$f" 2> /dev/null | grep -o 'GLIBC_2\.[0-9]*' ; done | sort -t. -k2 -n -u | tail -1)
echo "build-device: $(du -sh $B | cut -f1) (carry limit 64 MiB); newest glibc symbol needed: $need" >&2
ls $B/deps >&2
