#!/usr/bin/env bash
# The docs against the code: the versions they state and the build dependencies README.md lists, taken from the
# code and compared (as layering.sh compares the folder READMEs with the files). Prints TAP lines.
#   - the ring's version (schema/ring.h) where a doc gives the ring's magic and version (schema/README.md);
#   - the trace database's version and the oldest one read (schema/trace_db.h) in docs/trace-database.md;
#   - the JSON profile's version (what engine/api.c and analyzer/json_v3_write.c write and json_v3_read.c reads)
#     in every "version-N" of the docs;
#   - `ggprof --version`'s numbers against the Makefile and the headers;
#   - the build dependencies: README.md's list = `tests/deps.sh --list build` = build-essential and the Debian
#     packages that own the headers the always-built sources include (cc -M, dpkg -S).
# Each comparison then runs once more against copies of the docs with a planted wrong number (or a package left
# out) and must fail there, so that no check can pass by finding nothing.
# usage: tests/docs_versions.sh   (GGPROF: the ggprof to ask, default build/bin/ggprof)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
GGPROF=${GGPROF:-$ROOT/build/bin/ggprof}

define() { # FILE NAME: the number #define NAME gives in FILE
    sed -n "s/^#define $2 *\([0-9][0-9]*\).*/\1/p" "$1"
}
RING=$(define schema/ring.h GGPROF_RING_VERSION)
DB=$(define schema/trace_db.h GGPROF_DB_VERSION)
DB_MIN=$(define schema/trace_db.h GGPROF_DB_VERSION_MIN)
DEVICE_API=$(define schema/device_api.h GGPROF_DEVICE_API_VERSION)
RELEASE=$(sed -n 's/^GGPROF_VERSION *:= *\([^ ]*\)$/\1/p' Makefile)
# The JSON profile's version: the number both writers write and the reader accepts, when they agree.
json_versions=$( { sed -n 's/.*\\"version\\": \([0-9][0-9]*\),.*/\1/p' engine/api.c analyzer/json_v3_write.c
    sed -n 's/.*if (version != \([0-9][0-9]*\)).*/\1/p' analyzer/json_v3_read.c; } | sort -u)
for v in RING DB DB_MIN DEVICE_API RELEASE; do
    [ -n "${!v}" ] || echo "not ok - docs_versions: could not read $v from the code"
done
if [ "$(wc -l <<< "$json_versions")" = 1 ] && [ -n "$json_versions" ]; then
    echo "ok - docs_versions: both JSON writers and the reader agree on version $json_versions"
    JSON=$json_versions
else
    echo "not ok - docs_versions: the JSON writers and reader disagree or were not found: $(echo $json_versions)"
    JSON=${json_versions%%$'\n'*}
fi

# The docs' checks, on the docs under DIR (the checkout, or a copy with something planted). Each prints
# "ok - docs_versions: ..." or "not ok - docs_versions: ...".
check_ring() { # DIR
    local found bad
    found=$(grep -rhoE 'magic `GGPRING`, version [0-9]+' --include='*.md' "$1" | grep -oE '[0-9]+$')
    bad=$(grep -vx "$RING" <<< "$found" | sort -u | tr '\n' ' ')
    if [ -z "$found" ]; then echo "not ok - docs_versions: no doc gives the ring's version (schema/README.md)"
    elif [ -n "$bad" ]; then echo "not ok - docs_versions: a doc gives ring version ${bad% }; schema/ring.h: $RING"
    else echo "ok - docs_versions: the docs give the ring's version as schema/ring.h does ($RING)"; fi
}
check_db() { # DIR
    local line want
    line=$(grep -m1 'writes a SQLite database (schema version' "$1/docs/trace-database.md")
    want="schema version $DB; \`meta.schema_version\`; versions $DB_MIN to $((DB - 1)) are read too"
    if [ -z "$line" ]; then echo "not ok - docs_versions: docs/trace-database.md has no schema version line"
    elif [[ "$line" != *"$want"* ]]; then
        echo "not ok - docs_versions: docs/trace-database.md: '$line'; schema/trace_db.h says: $want"
    else echo "ok - docs_versions: docs/trace-database.md gives schema/trace_db.h's versions ($DB, reads $DB_MIN..$DB)"; fi
}
check_json() { # DIR
    local found bad
    found=$(grep -rhoE 'version-[0-9]+ (JSON|profile|record|format)' --include='*.md' "$1" | grep -oE '[0-9]+' )
    bad=$(grep -vx "$JSON" <<< "$found" | sort -u | tr '\n' ' ')
    if [ -z "$found" ]; then echo "not ok - docs_versions: no doc names the JSON profile's version"
    elif [ -n "$bad" ]; then echo "not ok - docs_versions: a doc names JSON version ${bad% }; the code writes $JSON"
    else echo "ok - docs_versions: every doc's version-N JSON is the code's ($JSON, $(wc -l <<< "$found") places)"; fi
}
# The build list README.md quotes: the backquoted names on its line that names `tests/deps.sh --list build`.
readme_build() { # DIR
    grep -A3 'tests/deps.sh --list build' "$1/README.md" | tr '\n' ' ' | sed 's/.*tests\/deps.sh --list build`[^:]*://' |
        sed 's/[.(].*//' | grep -oE '`[a-z0-9.+-]+`' | tr -d '`' | sort -u
}
check_readme_deps() { # DIR
    local want have
    want=$(bash tests/deps.sh --list build | sort -u)
    have=$(readme_build "$1")
    if [ -z "$have" ]; then echo "not ok - docs_versions: README.md quotes no build list (tests/deps.sh --list build)"
    elif [ "$want" != "$have" ]; then
        echo "not ok - docs_versions: README.md's build packages ($(echo $have)) are not tests/deps.sh's ($(echo $want))"
    else echo "ok - docs_versions: README.md quotes tests/deps.sh's build list ($(echo $want))"; fi
}

check_ring "$ROOT"
check_db "$ROOT"
check_json "$ROOT"
check_readme_deps "$ROOT"

# ggprof --version: the release from the Makefile, the ring's, database's and plugin API's from the headers.
if out=$("$GGPROF" --version 2>&1); then
    want="ggprof $RELEASE
ring and wire messages: version $RING
trace database: version $DB (reads $DB_MIN to $DB)
device plugin API: version $DEVICE_API"
    got=$(sed '1s/ (git .*)$//' <<< "$out")
    if [ "$got" = "$want" ]; then echo "ok - docs_versions: ggprof --version prints the Makefile's and headers' versions"
    else echo "not ok - docs_versions: ggprof --version printed '$(echo $got)'; the code says '$(echo $want)'"; fi
else
    echo "not ok - docs_versions: $GGPROF --version failed: $out"
fi

# The build list against the headers: every header the always-built sources include (cc -M with each folder's
# include path, as the Makefile compiles them), the Debian package owning it (dpkg -S); the C library's and the
# compiler's own (libc6-dev, linux-libc-dev, libgcc-N-dev) are build-essential's.
srcs=$(make -s --no-print-directory -f Makefile -f - ggprof-print-src << 'MK'
ggprof-print-src: ; @$(foreach f,$(sort $(ENGINE_SRC) $(GGPROF_SRC)),echo '$(call inc,$(f)) $(f)';)
MK
)
if [ -z "$srcs" ]; then
    echo "not ok - docs_versions: the Makefile gave no source list"
else
    headers=$(while read -r line; do
        # shellcheck disable=SC2086 # the include flags, word-split on purpose
        cc -std=c11 -D_GNU_SOURCE -M $line
    done <<< "$srcs" | tr ' \\' '\n\n' | grep '^/' | xargs -r realpath -e | sort -u)
    owners=$(xargs -r dpkg -S <<< "$headers" 2> /dev/null | grep -v '^diversion' | sed 's/[:,].*//' | sort -u)
    derived=$( { echo build-essential; grep -vE '^(libc6-dev|linux-libc-dev|libgcc-[0-9]+-dev)$' <<< "$owners"; } | sort -u)
    check_build_list() { # LIST: one package a line
        if [ -z "$owners" ]; then
            echo "not ok - docs_versions: no Debian package owns the headers the sources include (dpkg -S)"
        elif [ "$derived" != "$(sort -u <<< "$1")" ]; then
            echo "not ok - docs_versions: tests/deps.sh's build list ($(echo $1)) is not what the headers need ($(echo $derived))"
        else
            echo "ok - docs_versions: tests/deps.sh's build list is the packages of the headers the sources include"
        fi
    }
    check_build_list "$(bash tests/deps.sh --list build)"
    # and on a list planted without libmicrohttpd-dev
    if check_build_list "$(bash tests/deps.sh --list build | grep -vx libmicrohttpd-dev)" | grep -q '^not ok'; then
        echo "ok - docs_versions: a build list planted without libmicrohttpd-dev is caught"
    else
        echo "not ok - docs_versions: a build list planted without libmicrohttpd-dev went unnoticed"
    fi
fi

# The checks themselves, on copies of the docs with something planted: each must fail.
plant=$(mktemp -d)
trap 'rm -rf "$plant"' EXIT
planted() { # NAME CHECK FILE SED-EXPR: copies the docs, edits FILE, expects CHECK to say "not ok"
    rm -rf "${plant:?}"/*
    git ls-files '*.md' | while read -r f; do mkdir -p "$plant/$(dirname "$f")"; cp "$f" "$plant/$f"; done
    sed -i "$4" "$plant/$3"
    if cmp -s "$3" "$plant/$3"; then
        echo "not ok - docs_versions: the plant ($1) changed nothing in $3"
    elif "$2" "$plant" | grep -q '^not ok'; then
        echo "ok - docs_versions: a planted $1 is caught"
    else
        echo "not ok - docs_versions: a planted $1 went unnoticed"
    fi
}
planted "ring version $((RING + 1)) in schema/README.md" check_ring schema/README.md \
    "s/magic \`GGPRING\`, version $RING/magic \`GGPRING\`, version $((RING + 1))/"
planted "schema version $((DB - 1)) in docs/trace-database.md" check_db docs/trace-database.md \
    "s/(schema version $DB;/(schema version $((DB - 1));/"
planted "version-$((JSON + 1)) JSON in docs/viewer.md" check_json docs/viewer.md "s/version-$JSON JSON/version-$((JSON + 1)) JSON/"
planted "build list without libcjson-dev in README.md" check_readme_deps README.md "s/\`libcjson-dev\`, //"
