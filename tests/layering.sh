#!/usr/bin/env bash
# The layering check: every #include "..." of ggprof's sources resolved as the Makefile's include paths resolve
# it, each folder's includes checked against the folders it may use, and the folder graph printed (the one
# docs/how-it-works.md shows), then the same for calls: the symbols each built object uses (nm) against the folders
# that define them. Prints TAP lines. usage: tests/layering.sh [--graph]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# What each folder may include, besides itself (the Makefile's INC_* lists say the same to the compiler).
allowed() { # FOLDER
    case "$1" in
        schema) echo "" ;;
        engine) echo "schema" ;;
        kernels/*) echo "schema engine" ;;
        plugin) echo "schema" ;;
        analyzer) echo "schema" ;;
        collector) echo "schema analyzer" ;;
    esac
}
# The search path after the including file's own folder.
search_path() { # FOLDER
    case "$1" in
        engine) echo "schema engine/include" ;;
        kernels/*) echo "schema engine engine/include" ;;
        plugin) echo "schema" ;;
        schema) echo "schema" ;;
        analyzer) echo "schema" ;;
        collector) echo "schema analyzer" ;;
    esac
}
folder_of() { # FILE: the layer a file belongs to (the libraries a device runtime loads on its own: plugin)
    case "$1" in
        kernels/vulkan/vk_layer.c | kernels/cuda/cupti_trace.c) echo plugin ;;
        kernels/*) echo "$(cut -d/ -f1-2 <<< "$1")" ;;
        engine/include/*) echo engine ;;
        *) echo "${1%%/*}" ;;
    esac
}
layer_of_path() { # PATH of an included file
    case "$1" in
        kernels/*) cut -d/ -f1-2 <<< "$1" ;;
        engine/include/*) echo engine ;;
        *) echo "${1%%/*}" ;;
    esac
}

bad=0
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in $(git ls-files 'schema/*.[ch]' 'engine/*.[ch]' 'kernels/*.[ch]' 'analyzer/*.[ch]' 'collector/*.[ch]'); do
    from=$(folder_of "$f")
    dir=$(dirname "$f")
    while read -r h; do
        found=""
        for d in "$dir" $(search_path "$from"); do
            [ -f "$d/$h" ] && { found=$(realpath -m --relative-to="$ROOT" "$d/$h"); break; }
        done
        if [ -z "$found" ]; then
            echo "not ok - layering: $f includes \"$h\", which its folder's include path does not reach"
            bad=1
            continue
        fi
        to=$(layer_of_path "$found")
        [ "$to" = "$(layer_of_path "$f")" ] && [ "$from" != plugin ] && continue
        [ "$from" = plugin ] && [ "$to" = "$(layer_of_path "$f")" ] && continue
        echo "$from -> $to" >> "$edges"
        case " $(allowed "$from") " in
            *" $to "*) ;;
            *) echo "not ok - layering: $f includes $found ($from may include only: $(allowed "$from") and itself)"
               bad=1 ;;
        esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done
graph=$(sort -u "$edges")
if [ "${1:-}" = --graph ]; then
    echo "$graph"
    exit "$bad"
fi
[ "$bad" = 0 ] && echo "ok - layering: every include goes down the layers"
# The graph has no cycle: no folder both includes and is included by another, directly or through a third.
cyclic=$(awk '{ print $1, $3 }' <<< "$graph" | tsort 2>&1 > /dev/null | grep -c 'cycle')
if [ "$cyclic" = 0 ]; then echo "ok - layering: the folder graph has no cycle"; else echo "not ok - layering: the folder graph has a cycle"; fi
sed 's/^/# /' <<< "$graph"

# Calls, not only includes: no object calls (or reads) a symbol that only a folder above it defines. Each object of
# the build (OBJ/pic, OBJ/bin: the source path below it names its folder) is read with nm; a symbol is "above" when
# every object defining it lies in a folder the caller may not include.
check_symbols() { # OBJ_DIR: prints one "not ok" line per call against the layers, and "ok" when there is none
    local dir=$1 defs uses n=0
    defs=$(mktemp) uses=$(mktemp)
    for o in $(find "$dir" -name '*.o' | sort); do
        local rel=${o#"$dir"/} f
        rel=${rel#*/} # below pic/ or bin/
        f=$(folder_of "${rel%.o}.c")
        [ -f "$ROOT/${rel%.o}.c" ] || [ "$dir" != "$BUILD_DIR/obj" ] || continue # a renamed file's old object
        [ -n "$(allowed "$f")" ] || [ "$f" = schema ] || continue
        nm -g --defined-only "$o" 2> /dev/null | awk -v f="$f" 'NF == 3 { print $3, f }' >> "$defs"
        nm -u "$o" 2> /dev/null | awk -v f="$f" -v o="$rel" '{ print $NF, f, o }' >> "$uses"
    done
    # one pass: the folders defining each symbol, then each use checked against its folder's allowed list
    local rules
    rules=$(for f in schema engine kernels/cpu kernels/cuda kernels/opencl kernels/vulkan plugin analyzer collector; do
        echo "$f $(allowed "$f")"; done)
    local out
    out=$(awk -v rules="$rules" '
        BEGIN { split(rules, lines, "\n"); for (i in lines) { k = split(lines[i], w, " "); for (j = 2; j <= k; j++) may[w[1], w[j]] = 1 } }
        FNR == NR { if (!index(" " def[$1] " ", " " $2 " ")) def[$1] = def[$1] " " $2; next }
        ($1 in def) {
            k = split(def[$1], w, " "); ok = 0
            for (j = 1; j <= k; j++) if (w[j] == $2 || may[$2, w[j]]) ok = 1
            if (!ok) printf "not ok - layering: %s (%s) calls %s, which only%s defines\n", $3, $2, $1, def[$1]
        }' "$defs" "$uses")
    [ -n "$out" ] && echo "$out"
    n=$(grep -c '^not ok' <<< "$out")
    rm -f "$defs" "$uses"
    [ "$n" = 0 ] && echo "ok - layering: no object calls a folder above its own ($dir)"
}
BUILD_DIR=${GGPROF_BUILD:-build}
if [ -d "$BUILD_DIR/obj/pic" ]; then
    check_symbols "$BUILD_DIR/obj"
else
    echo "not ok - layering: no objects in $BUILD_DIR/obj to check the calls of (run make first)"
fi
# The check itself, on a planted call: a schema/ object that calls a function only analyzer/ defines must fail.
plant=$(mktemp -d)
mkdir -p "$plant/bin/schema" "$plant/bin/analyzer"
echo 'int ggprof_planted_above(void) { return 1; }' | cc -x c -c -o "$plant/bin/analyzer/planted_above.o" -
echo 'int ggprof_planted_above(void); int ggprof_planted_below(void) { return ggprof_planted_above(); }' |
    cc -x c -c -o "$plant/bin/schema/planted_below.o" -
if check_symbols "$plant" | grep -q '^not ok - layering: schema/planted_below.o (schema) calls ggprof_planted_above'; then
    echo "ok - layering: a planted call from schema/ to analyzer/ is caught"
else
    echo "not ok - layering: a planted call from schema/ to analyzer/ went unnoticed"
fi
rm -rf "$plant"

# Inside a folder: no call cycle among its files. Each file has a place in its folder's order, bottom first (a
# pattern is a rank its files share); an object may call (nm -u against the others' nm --defined-only) only files of a
# lower rank. analyzer/'s order is analyzer/README.md's: the model and its rule at the bottom, the commands on top.
# engine/'s is engine/README.md's: the sink at the bottom; what ggml is (its ELF image, resolving, patching, how its
# calls reach the engine, probing, describing, schedulers); the set-up; the wrappers on top.
ANALYZER_ORDER="sql layer_rule model model_vtab views output gzout json_v3_read json_v3_write trace memory placement process_time threads request_time roofline roofs
    roofline_groups testcases calibrate accounting findings export_text export_chrome export_html export_otlp export_roofline cmd_*"
ENGINE_ORDER="sink elf_image resolve patch reach probe describe schedulers setup profile regions llama memory placement api
    interpose"
file_rank() { # ORDER STEM: the file's rank in ORDER, or -1 when it has none
    local i=0 g
    for g in $1; do
        # shellcheck disable=SC2254 # the order's patterns are globs on purpose
        case "$2" in $g) echo "$i"; return ;; esac
        i=$((i + 1))
    done
    echo -1
}
check_folder_calls() { # FOLDER ORDER DIR (its *.o): one "not ok" line per upward call or unplaced file, "ok" when none
    local folder=$1 order=$2 dir=$3 defs uses o stem r out
    defs=$(mktemp) uses=$(mktemp)
    for o in "$dir"/*.o; do
        stem=$(basename "$o" .o)
        # an object whose source is gone (a file renamed since this build folder was made) is no part of the tree
        [ -f "$ROOT/$folder/$stem.c" ] || continue
        r=$(file_rank "$order" "$stem")
        nm -g --defined-only "$o" 2> /dev/null | awk -v f="$stem" -v r="$r" 'NF == 3 { print $3, f, r }' >> "$defs"
        nm -u "$o" 2> /dev/null | awk -v f="$stem" -v r="$r" '{ print $NF, f, r }' >> "$uses"
    done
    out=$(awk -v d="$folder" 'FNR == NR { def[$1] = $2; rank[$1] = $3; next }
        ($1 in def) && def[$1] != $2 {
            if ($3 < 0) bad[$2] = 1
            else if (rank[$1] < 0) bad[def[$1]] = 1
            else if (rank[$1] >= $3) printf "not ok - layering: %s/%s.c calls %s of %s/%s.c, not below it in the %s order\n", d, $2, $1, d, def[$1], d
        }
        END { for (f in bad) printf "not ok - layering: %s/%s.c has no place in the %s order (tests/layering.sh)\n", d, f, d }' \
        "$defs" "$uses" | sort -u)
    local cycles
    cycles=$(awk 'FNR == NR { def[$1] = $2; next } ($1 in def) && def[$1] != $2 { print $2, def[$1] }' "$defs" "$uses" |
        sort -u | tsort 2>&1 > /dev/null | grep -c 'input contains a loop')
    rm -f "$defs" "$uses"
    [ -n "$out" ] && echo "$out"
    [ "$cycles" != 0 ] && echo "not ok - layering: $cycles call cycle(s) among $folder/'s files"
    [ -z "$out" ] && [ "$cycles" = 0 ] && echo "ok - layering: 0 call cycles inside $folder/, each file calls only files below it"
}
# The check itself, on a copy of the folder's objects with an upward call planted into LOW's object: LOW calling
# SYMBOL of HIGH, which calls down to LOW (a cycle), must fail.
check_folder_plant() { # FOLDER ORDER DIR LOW SYMBOL HIGH
    local folder=$1 order=$2 dir=$3 low=$4 sym=$5 high=$6 plant
    plant=$(mktemp -d)
    cp "$dir"/*.o "$plant/"
    echo "int $sym(void *); int ggprof_planted_up(void) { return $sym(0); }" | cc -x c -c -o "$plant/planted.tmp" -
    ld -r -o "$plant/$low.tmp" "$plant/$low.o" "$plant/planted.tmp" && mv "$plant/$low.tmp" "$plant/$low.o"
    rm -f "$plant/planted.tmp"
    if check_folder_calls "$folder" "$order" "$plant" | grep -q "^not ok - layering: $folder/$low.c calls $sym "; then
        echo "ok - layering: a planted upward call inside $folder/ ($low.c to $high.c) is caught"
    else
        echo "not ok - layering: a planted upward call inside $folder/ ($low.c to $high.c) went unnoticed"
    fi
    rm -rf "$plant"
}
check_folder() { # FOLDER ORDER OBJ_DIR LOW SYMBOL HIGH: the folder's calls, then the check on a planted upward call
    if [ -d "$3" ]; then
        check_folder_calls "$1" "$2" "$3"
        check_folder_plant "$@"
    else
        echo "not ok - layering: no objects in $3 to check $1/'s calls of (run make first)"
    fi
}
# analyzer/: layer_rule.o (the bottom) calling views.c's ggprof_views_create, a cycle through views.c.
check_folder analyzer "$ANALYZER_ORDER" "$BUILD_DIR/obj/bin/analyzer" layer_rule ggprof_views_create views
# engine/: sink.o (the bottom) calling setup.c's ggprof_engine_ready, a cycle through setup.c (which calls the sink).
check_folder engine "$ENGINE_ORDER" "$BUILD_DIR/obj/pic/engine" sink ggprof_engine_ready setup

# Every source file is named in its folder's README (by its name, its .c/.h partner's, or a pattern the README
# writes, such as `cmd_<name>.c` or `export_*.c`): the READMEs say what lives where.
unnamed=0
for d in schema engine engine/include kernels/cpu kernels/cuda kernels/opencl kernels/vulkan analyzer collector viewer; do
    readme=$d/README.md
    [ -f "$readme" ] || readme=$(dirname "$d")/README.md
    [ -f "$readme" ] || continue
    # the README's patterns, as shell globs: <word> and * both stand for any name
    globs=$(grep -o '`[^`]*[*<][^`]*`' "$readme" | tr -d '`' | sed 's/<[^>]*>/*/g')
    for f in $(git ls-files "$d/*.c" "$d/*.h" "$d/*.js" "$d/*.css" "$d/*.html" | grep -v "^$d/.*/"); do
        b=$(basename "$f")
        stem=${b%.*}
        grep -qF "$b" "$readme" && continue
        grep -qE "\\b$stem\\.(c|h)\\b" "$readme" && continue
        hit=0
        for g in $globs; do
            # shellcheck disable=SC2254 # the README's pattern is a glob on purpose
            case "$b" in $g) hit=1 ;; esac
        done
        [ "$hit" = 1 ] && continue
        echo "not ok - layering: $f is not named in $readme"
        unnamed=$((unnamed + 1))
    done
done
[ "$unnamed" = 0 ] && echo "ok - layering: every source file is named in its folder's README"
