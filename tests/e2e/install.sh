# make install: DESTDIR=$OUT/root PREFIX=/usr/local from this build folder, then the installed copy on its own: its
# --version, a llama-completion recording with the library and plugins it installed (never the build folder's,
# and with GGPROF_LIB and GGPROF_BIN unset, from a folder outside the repository), GGML_PROFILE with the installed
# library (which finds the installed ggprof), and make uninstall.
. "$(dirname "$0")/../lib.sh"

BUILD_DIR=$(cd "$(dirname "$GGPROF")/.." && pwd)
BUILD_REL=${BUILD_DIR#"$GGPROF_ROOT"/}
D=$OUT/root
P=$D/usr/local
H=$P/lib/ggprof
rm -rf "$D"
make -C "$GGPROF_ROOT" --no-print-directory BUILD="$BUILD_REL" SAN="${GGPROF_SAN:-}" install DESTDIR="$D" \
    PREFIX=/usr/local > "$OUT/install.log" 2>&1
expect "make install DESTDIR=... PREFIX=/usr/local exits 0" "$?" 0

# The layout: PREFIX/bin/ggprof a relative link into PREFIX/lib/ggprof, which holds the build folder's bin/ and
# lib/ as they are: libggprof.so and each plugin this build made, the Vulkan layer's manifest in lib/vulkan/.
expect "PREFIX/bin/ggprof links to ../lib/ggprof/bin/ggprof" "$(readlink "$P/bin/ggprof")" ../lib/ggprof/bin/ggprof
expect "PREFIX/lib/ggprof/bin/ggprof is a program" "$([ -x "$H/bin/ggprof" ] && [ ! -L "$H/bin/ggprof" ] && echo yes)" yes
installed=""
for f in libggprof.so libggprof-vulkan.so libggprof-cupti.so vulkan/ggprof_layer.json; do
    [ -f "$BUILD_DIR/lib/$f" ] || continue
    installed="$installed $f"
    expect "lib/$f installed, the same as the build's" "$(cmp -s "$BUILD_DIR/lib/$f" "$H/lib/$f" && echo same)" same
done
echo "# installed:$installed"
if [ -f "$H/lib/vulkan/ggprof_layer.json" ]; then
    lp=$(sed -n 's/.*"library_path": "\(.*\)".*/\1/p' "$H/lib/vulkan/ggprof_layer.json")
    expect "the Vulkan manifest's library_path ($lp) reaches the installed layer" \
        "$([ "${lp#/}" = "$lp" ] && [ -f "$H/lib/vulkan/$lp" ] && echo yes)" yes
fi

# --version: the release and the schema versions of schema/, from the installed copy, as from the build's.
ring=$(sed -n 's/^#define GGPROF_RING_VERSION \([0-9]*\).*/\1/p' "$GGPROF_ROOT/schema/ring.h")
dbv=$(sed -n 's/^#define GGPROF_DB_VERSION  *\([0-9]*\).*/\1/p' "$GGPROF_ROOT/schema/trace_db.h")
dbmin=$(sed -n 's/^#define GGPROF_DB_VERSION_MIN  *\([0-9]*\).*/\1/p' "$GGPROF_ROOT/schema/trace_db.h")
rel=$(sed -n 's/^GGPROF_VERSION *:= *//p' "$GGPROF_ROOT/Makefile")
"$P/bin/ggprof" --version > "$OUT/version.txt" 2> "$OUT/version.err"
expect "installed ggprof --version exits 0" "$?" 0
expect "--version: the release first" "$(head -n 1 "$OUT/version.txt" | cut -d' ' -f1-2)" "ggprof $rel"
expect "--version: the ring's version (schema/ring.h)" \
    "$(grep -c "^ring and wire messages: version $ring\$" "$OUT/version.txt")" 1
expect "--version: the trace database's version and the oldest read (schema/trace_db.h)" \
    "$(grep -c "^trace database: version $dbv (reads $dbmin to $dbv)\$" "$OUT/version.txt")" 1
expect "'ggprof version' says the same" "$("$P/bin/ggprof" version | cmp -s - "$OUT/version.txt" && echo same)" same
expect "the build's ggprof --version says the same" "$("$GGPROF" --version | cmp -s - "$OUT/version.txt" && echo same)" same
expect_ge "ggprof --help names --version" "$("$P/bin/ggprof" --help | grep -c -e '--version')" 1
"$P/bin/ggprof" --version extra > /dev/null 2>&1
expect "--version with an argument is a usage error" "$?" 2

# A recording by the installed copy, from outside the repository, GGPROF_LIB and GGPROF_BIN unset. The workload is
# a shell that writes down what the loader gave it (LD_PRELOAD, the libggprof files in its /proc maps, the plugin
# paths libggprof.so's constructors set), then runs llama-completion, which inherits all of it.
away=$(mktemp -d)
db=$OUT/installed.db
# shellcheck disable=SC2016
(cd "$away" && env -u GGPROF_LIB -u GGPROF_BIN "$P/bin/ggprof" record -q -o "$db" -- sh -c '
    echo "$$" > "$0.pid"
    echo "$LD_PRELOAD" | tr ":" "\n" | grep libggprof > "$0.preload"
    grep -o "/[^ ]*libggprof[^ ]*" /proc/$$/maps | sort -u > "$0.maps"
    echo "${VK_LAYER_PATH:-}" | tr ":" "\n" | grep . | head -n 1 > "$0.vk"
    echo "${CUDA_INJECTION64_PATH:-}" > "$0.cuda"
    "$@"
    exit $?' "$OUT/wrap" "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" -p Hello -n 4 -t 2 -no-cnv --no-warmup \
    > "$OUT/record.out" 2> "$OUT/record.err")
expect "installed record exits with llama-completion's status" "$?" 0
rm -rf "$away"
lib=$(realpath "$H/lib/libggprof.so")
expect "LD_PRELOAD named the installed libggprof.so" "$(realpath "$(cat "$OUT/wrap.preload")")" "$lib"
expect "the loader mapped the installed libggprof.so, and no other" "$(cat "$OUT/wrap.maps")" "$lib"
if [ -f "$H/lib/libggprof-vulkan.so" ] && [ "${GGPROF_VULKAN:-}" != 0 ]; then
    expect "VK_LAYER_PATH leads to the installed layer's manifest" "$(cat "$OUT/wrap.vk")" "$(realpath "$H/lib")/vulkan"
fi
if [ -f "$H/lib/libggprof-cupti.so" ] && [ "${GGPROF_CUDA:-}" != 0 ] && [ -z "${CUDA_INJECTION64_PATH:-}" ]; then
    expect "CUDA_INJECTION64_PATH names the installed CUPTI library" "$(cat "$OUT/wrap.cuda")" \
        "$(realpath "$H/lib")/libggprof-cupti.so"
fi
expect "llama-completion is recorded as the wrapper's child" "$(q "$db" "SELECT count(*) FROM processes
    WHERE ggml_lib != '' AND ppid = $(cat "$OUT/wrap.pid") AND exe LIKE '%/llama-completion'")" 1
expect_ge "records in the trace" "$(q "$db" "SELECT count(*) FROM records")" 1
check_cpu_trace "$db" "installed"

# GGML_PROFILE with the installed library: the collector it starts is the installed ggprof (../bin/ggprof).
(cd "$OUT" && env -u GGPROF_LIB -u GGPROF_BIN LD_PRELOAD="${GGPROF_SAN_RT:+$GGPROF_SAN_RT:}$H/lib/libggprof.so" \
    ASAN_OPTIONS=$WORKLOAD_ASAN GGML_PROFILE="$OUT/profile.json" "$LLAMA_BIN_DIR/llama-completion" -m "$GGUF_DENSE" \
    -p Hello -n 4 -t 2 -no-cnv --no-warmup > "$OUT/profile.out" 2>&1)
expect "GGML_PROFILE with the installed library exits 0" "$?" 0
expect "GGML_PROFILE wrote a version-3 profile with records" "$(node -e 'const d = JSON.parse(require("fs")
    .readFileSync(process.argv[1], "utf8")); console.log(d.version === 3 && d.records.length > 0)' \
    "$OUT/profile.json" 2>&1)" true

make -C "$GGPROF_ROOT" --no-print-directory BUILD="$BUILD_REL" SAN="${GGPROF_SAN:-}" uninstall DESTDIR="$D" \
    PREFIX=/usr/local > "$OUT/uninstall.log" 2>&1
expect "make uninstall exits 0" "$?" 0
expect "make uninstall leaves no file" "$(find "$D" ! -type d | wc -l)" 0
