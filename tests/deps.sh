#!/usr/bin/env bash
# The Debian packages ggprof needs, in three lists, and installs (only if missing) the ones asked for. Idempotent.
# usage: tests/deps.sh            building ggprof, the demo and every test (`make test`)
#        tests/deps.sh --demo     building ggprof and the demo only (`make demo`)
#        tests/deps.sh --list build|demo|test   prints that list, one package a line (nothing installed)
# The build list is what README.md quotes, and tests/docs_versions.sh compares it with the packages that own the
# headers ggprof's sources include.
set -euo pipefail
# build: what `make` needs: the compiler, and the -dev packages whose headers the sources always include.
build=(build-essential)
build+=(libsqlite3-dev libcjson-dev zlib1g-dev) # the collector and analyzer: the trace database, JSON, gzip
build+=(libcapstone-dev) # engine/patch.c: capstone decodes the entries it patches where ggml is inside a program (libcapstone4 at run time)
build+=(libmicrohttpd-dev) # collector/metrics_http.c: record --metrics serves HTTP (its header; libmicrohttpd12, opened at run time)
# demo: what `make demo` adds (tests/fixture.sh --demo): node-llama-cpp's prebuilt libraries from npm, llama.cpp's
# headers cloned from the git bundle inside it.
demo=(git)
command -v node > /dev/null && command -v npm > /dev/null || demo+=(nodejs npm)
# test: what `make test` adds.
test=(cmake pkg-config libopenblas-dev) # tests/fixture.sh: llama.cpp built from source (CPU, OpenBLAS, RPC)
test+=(pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers) # tests/e2e/opencl.sh: an OpenCL CPU device
test+=(mesa-vulkan-drivers libvulkan1) # tests/e2e/vulkan.sh: lavapipe, a CPU Vulkan driver
test+=(libvulkan-dev) # kernels/vulkan/: the layer's headers (vulkan/vk_layer.h; built only where they are); tests/e2e/vulkan_timestamps.sh
test+=(clang libclang-rt-14-dev) # tests/fuzz/: libFuzzer, ASan, UBSan
test+=(debootstrap) # tests/compat/: Debian sid's llama.cpp-tools in a chroot
test+=(python3 sqlite3 time) # tests/bench/analysis_speed.sh: its references (json.load, the sqlite3 shell), peak memory
test+=(libxml2-utils) # tests/e2e/hostile_names.sh: xmllint checks the roofline SVG is well-formed
test+=(chromium) # tests/e2e/chrome_html.sh: the HTML timeline driven in a browser (tests/browser/)
test+=(prometheus tmux curl) # tests/e2e/metrics.sh: a real Prometheus scraping record --metrics, promtool, curl to ask both; ggprof top in tmux

case "${1:-}" in
    --list)
        case "${2:-}" in
            build) printf '%s\n' "${build[@]}" ;;
            demo) printf '%s\n' "${demo[@]}" ;;
            test) printf '%s\n' "${test[@]}" ;;
            *) echo "deps: --list: '${2:-}' is not a list (build, demo or test)" >&2; exit 2 ;;
        esac
        exit 0 ;;
    --demo) pkgs=("${build[@]}" "${demo[@]}") ;;
    '') pkgs=("${build[@]}" "${demo[@]}" "${test[@]}") ;;
    *) echo "deps: '$1' is not an option (--demo, --list build|demo|test)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
echo "deps: installing ${missing[*]}" >&2
[ "$(id -u)" = 0 ] || { echo "deps: need root to apt-get install ${missing[*]}" >&2; exit 1; }
apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
