#!/usr/bin/env bash
# Installs (only if missing) the Debian packages that building and testing ggprof need. Idempotent.
set -euo pipefail
pkgs=(build-essential cmake git pkg-config libsqlite3-dev libcjson-dev zlib1g-dev libopenblas-dev)
pkgs+=(pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers) # tests/e2e/opencl.sh: an OpenCL CPU device
pkgs+=(mesa-vulkan-drivers libvulkan1) # tests/e2e/vulkan.sh: lavapipe, a CPU Vulkan driver
pkgs+=(libvulkan-dev) # kernels/vulkan/: the layer's headers (vulkan/vk_layer.h); tests/e2e/vulkan_timestamps.sh
pkgs+=(clang libclang-rt-14-dev) # tests/fuzz/: libFuzzer, ASan, UBSan
pkgs+=(debootstrap) # tests/compat/: Debian sid's llama.cpp-tools in a chroot
pkgs+=(libcapstone-dev) # engine/patch.c: capstone decodes the entries it patches where ggml is inside a program (libcapstone4 at run time)
pkgs+=(python3 sqlite3 time) # tests/bench/analysis_speed.sh: its references (json.load, the sqlite3 shell), peak memory
pkgs+=(libxml2-utils) # tests/e2e/hostile_names.sh: xmllint checks the roofline SVG is well-formed
pkgs+=(graphviz) # tests/e2e/placement.sh: dot -Tsvg renders export --dot
pkgs+=(chromium) # tests/e2e/chrome_html.sh: the HTML timeline driven in a browser (tests/browser/)
pkgs+=(libmicrohttpd-dev) # collector/metrics_http.c: record --metrics serves HTTP (its header; libmicrohttpd12, opened at run time)
pkgs+=(prometheus tmux curl) # tests/e2e/metrics.sh: a real Prometheus scraping record --metrics, promtool, curl to ask both; ggprof top in tmux
command -v node > /dev/null && command -v npm > /dev/null || pkgs+=(nodejs npm)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "deps: installing ${missing[*]}" >&2
[ "$(id -u)" = 0 ] || { echo "deps: need root to apt-get install ${missing[*]}" >&2; exit 1; }
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
