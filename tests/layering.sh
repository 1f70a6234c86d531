#!/usr/bin/env bash
# The layering check: every #include "..." of ggprof's sources resolved as the Makefile's include paths resolve
# it, each folder's includes checked against the folders it may use, and the folder graph printed (the one
# docs/how-it-works.md shows). Prints TAP lines. usage: tests/layering.sh [--graph]
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
