#!/usr/bin/env bash
# docs/trace-database.md's column lists against the trace database's DDL (schema/trace_db.c). Every table and view
# of a new trace, with its columns in order (PRAGMA table_info), read from ggprof itself: `ggprof query` on a JSON
# sample reads it into a new trace database made with that DDL, so no fixture is needed. Each must have a list in
# the doc, `NAME(col, col, ...)`, and every list of that name must be its columns, in order; a list naming no table
# or view of the DDL fails too. Then the same comparison runs on a planted drift (a column left out of the doc, a
# column added to the DDL, a table renamed) and must fail there, so that it cannot pass by finding nothing.
# usage: tests/schema_doc.sh   (GGPROF: the ggprof to ask, default build/bin/ggprof). Prints TAP lines.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
GGPROF=${GGPROF:-$ROOT/build/bin/ggprof}
DOC=docs/trace-database.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "NAME col, col, ..." for each table and view of the main schema of a new trace.
if ! "$GGPROF" query samples/traces/upstream-v3-min.json \
    "SELECT m.name || ' ' || (SELECT group_concat(c.name, ', ') FROM (SELECT name FROM pragma_table_info(m.name, 'main')
     ORDER BY cid) c) FROM main.sqlite_master m WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\'
     ORDER BY m.name" > "$tmp/ddl" 2> "$tmp/err" || [ ! -s "$tmp/ddl" ]; then
    echo "not ok - schema_doc: cannot list the DDL's columns: $(head -c 300 "$tmp/err")"
    exit 0
fi

# "NAME col, col, ..." for each `NAME(col, ...)` of a doc (a list may wrap lines), sorted and unique.
doc_lists() {
    tr '\n' ' ' < "$1" | grep -o '`[a-z_][a-z_0-9]*([a-z_0-9, ]*)`' | tr -s ' ' |
        sed 's/^`\([a-z_0-9]*\)(\(.*\))`$/\1 \2/' | sort -u
}

# compare DDL DOC_LISTS: prints one line per difference; none when they agree.
compare() {
    local name cols listed
    while read -r name cols; do
        listed=$(awk -v n="$name" '$1 == n { $1 = ""; print substr($0, 2) }' "$2")
        if [ -z "$listed" ]; then
            echo "$name: no list in the doc; the DDL has ($cols)"
        elif [ "$listed" != "$cols" ]; then
            echo "$name: the doc lists ($(echo "$listed" | paste -sd '|' | sed 's/|/) and (/g')), the DDL has ($cols)"
        fi
    done < "$1"
    while read -r name cols; do
        awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' "$1" || echo "$name: listed in the doc, not a table or view of the DDL"
    done < "$2"
}

doc_lists "$DOC" > "$tmp/doc"
diffs=$(compare "$tmp/ddl" "$tmp/doc")
if [ -z "$diffs" ]; then
    echo "ok - schema_doc: $DOC lists the columns of the $(wc -l < "$tmp/ddl") tables and views of the DDL, in order"
else
    echo "not ok - schema_doc: $DOC and the DDL differ:"
    sed 's/^/#   /' <<< "$diffs"
fi

# Planted drifts: each must be found.
plant() { # WHAT DDL DOC: the comparison must report a difference
    if [ -n "$(compare "$2" "$3")" ]; then
        echo "ok - schema_doc: finds a planted drift ($1)"
    else
        echo "not ok - schema_doc: misses a planted drift ($1)"
    fi
}
sed 's/, wait_ns, imbalance_ns)`/, imbalance_ns)`/' "$DOC" > "$tmp/doc_gap.md"
doc_lists "$tmp/doc_gap.md" > "$tmp/doc_gap"
plant "a column left out of the doc's op_threads" "$tmp/ddl" "$tmp/doc_gap"
sed 's/^\(notes .*\)$/\1, extra/' "$tmp/ddl" > "$tmp/ddl_more"
plant "a column added to the DDL's notes" "$tmp/ddl_more" "$tmp/doc"
sed 's/^losses /lost /' "$tmp/ddl" > "$tmp/ddl_renamed"
plant "a table renamed in the DDL" "$tmp/ddl_renamed" "$tmp/doc"
