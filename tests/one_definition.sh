#!/usr/bin/env bash
# One definition of each fact the analyzer shares (issue: labels and llama.cpp's region names written in several
# places drifted apart): the backend and type label fallbacks ("backend N", "no backend", "type N") live in
# analyzer/model.c only (ggprof_backend_label, ggprof_type_label: C callers call them, SQL calls the functions
# views.c registers), llama.cpp's region names and their depth (-1) in schema/llama_regions.h only. Greps the
# sources for a second copy: a string literal of a fallback, of a region name, or an SQL depth of -1. Then the
# same check on a planted copy of each, where it must fail. Needs no build and no fixture. Prints TAP lines.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
HEADER=schema/llama_regions.h
FOLDERS="analyzer collector schema engine kernels plugin"

# The region names: every X(name) of the header's call lists.
names=$(sed -n 's/^#define GGPROF_LLAMA_[A-Z_]*_CALLS(X) *//p' "$HEADER" | grep -o 'X([a-z_0-9]*)' | sed 's/^X(//; s/)$//' |
    sort -u)
if [ "$(echo "$names" | grep -c .)" -lt 5 ]; then
    echo "not ok - one definition: found only $(echo "$names" | grep -c .) region names in $HEADER's call lists"
    exit 1
fi
names_re=$(echo "$names" | paste -sd'|')

# grep_sources ROOT ERE: "path:line:text" for each line of the C sources under ROOT's folders that matches ERE.
grep_sources() {
    local f folders=()
    for f in $FOLDERS; do [ -d "$1/$f" ] && folders+=("$f"); done
    [ ${#folders[@]} -gt 0 ] || return 0
    (cd "$1" && grep -rnE --include='*.c' --include='*.h' --include='*.cpp' --include='*.cu' -e "$2" "${folders[@]}")
}

# report HITS WHAT: one "not ok" line per file among HITS.
report() {
    [ -n "$1" ] || return 0
    echo "$1" | awk -F: -v what="$2" '!seen[$1]++ { t = $0; sub(/^[^:]*:[^:]*:[ \t]*/, "", t)
        printf "not ok - one definition: %s:%s %s: %s\n", $1, $2, what, substr(t, 1, 100) }'
}

# check ROOT: one "not ok" line per file with a second definition under ROOT; nothing when there is none.
check() {
    # The label fallbacks, as C format strings or SQL text; model.h documents them.
    report "$(grep_sources "$1" "\"(backend|type) %|'(backend|type) ' *\\|\\||\"no backend\"" |
        grep -vE '^analyzer/model\.[ch]:')" \
        "writes a label fallback of its own (use ggprof_backend_label / ggprof_type_label, analyzer/model.h)"
    # llama.cpp's region names as literals, and their depth in SQL.
    report "$(grep_sources "$1" "[\"'](${names_re})[\"']" | grep -v "^$HEADER:")" \
        "names a llama.cpp region itself (use $HEADER's lists)"
    report "$(grep_sources "$1" "depth *(=|==|IS) *-1|depth *< *0" | grep -v "^$HEADER:")" \
        "writes llama.cpp's region depth itself (use GGPROF_LLAMA_REGION_DEPTH)"
}

out=$(check "$ROOT")
if [ -n "$out" ]; then
    echo "$out"
else
    echo "ok - one definition: the label fallbacks only in analyzer/model.c, llama.cpp's $(echo "$names" | grep -c .) region names and depth only in $HEADER"
fi

# The check itself: each kind of copy, planted in a file of its own, must be found.
plant=$(mktemp -d)
trap 'rm -rf "$plant"' EXIT
planted() { # NAME TEXT: the check on a tree whose analyzer/planted.c holds TEXT must name planted.c
    rm -rf "${plant:?}"/*
    mkdir -p "$plant/analyzer"
    printf '%s\n' "$2" > "$plant/analyzer/planted.c"
    if check "$plant" | grep -q '^not ok - one definition: analyzer/planted.c:'; then
        echo "ok - one definition: a planted $1 is caught"
    else
        echo "not ok - one definition: a planted $1 went unnoticed"
    fi
}
planted "C backend fallback" 'static void f(char *b, long id) { snprintf(b, 32, "backend %ld", id); }'
planted "SQL backend fallback" "static const char q[] = \"SELECT COALESCE(NULLIF(name, ''), 'backend ' || id) FROM backend_list\";"
planted "SQL type fallback" "static const char q[] = \"SELECT COALESCE(t.name, 'type ' || n.out_type) FROM nodes n\";"
planted "llama.cpp region name in SQL" "static const char q[] = \"SELECT 1 FROM regions WHERE name = '$(echo "$names" | head -n 1)'\";"
planted "llama.cpp region name in C" "static const char *n = \"$(echo "$names" | tail -n 1)\";"
planted "llama.cpp region depth in SQL" 'static const char q[] = "SELECT 1 FROM regions WHERE depth = -1";'
