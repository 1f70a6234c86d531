# Help cannot drift from the parser: for every command of ggprof's command table (as `ggprof --help` lists them),
# each option of the table it parses with (`ggprof help --options CMD`, printed by ggprof_parse_args from that very
# table) has a line in `ggprof CMD --help` and a place in its synopsis, is accepted by the parser (given without its
# value it is asked for one; a flag lets the parsing go on to the next argument), and is in the command's heading in
# README.md, which names no option the parser lacks. Each comparison is also run once on a planted help text and a
# planted README that lack an option (record's --metrics), and must find the gap. Needs no fixture.
. "$(dirname "$0")/../lib.sh"

README=$GGPROF_ROOT/README.md

# The commands, from `ggprof --help`: "  NAME  summary" lines after "commands:"; the internal ones (summary starting
# "(internal)") have no README heading.
mapfile -t CMDS < <("$GGPROF" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][-a-z]*\)  .*/\1/p')
mapfile -t INTERNAL < <("$GGPROF" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][-a-z]*\)  *(internal).*/\1/p')
expect_ge "ggprof --help lists the commands" "${#CMDS[@]}" 10
is_internal() { local i; for i in "${INTERNAL[@]}"; do [ "$i" = "$1" ] && return 0; done; return 1; }

# help_gaps OPTIONS HELP: the options (lines "NAME ALIAS|- value|flag command|window") missing from HELP's option
# block or synopsis, one a line.
help_gaps() {
    local name alias kind group syn
    syn=$(sed -n '1,/^$/p' <<< "$2")
    while read -r name alias kind group; do
        [ -n "$name" ] || continue
        local label="$name"
        [ "$alias" != - ] && label="$alias, $name"
        grep -qF -- "  $label" <<< "$2" || { echo "$name (no line in the options)"; continue; }
        grep -qE -- "^  $label( |$)" <<< "$2" || echo "$name (no line starting with it)"
        if [ "$group" = window ]; then
            grep -qF '[WINDOW]' <<< "$syn" || echo "$name (no [WINDOW] in the synopsis)"
        else
            local short=$name
            [ "$alias" != - ] && short=$alias
            grep -qF -- "[$short" <<< "$syn" || echo "$name (not in the synopsis)"
        fi
    done <<< "$1"
}

# readme_gaps README CMD OPTIONS: the differences between CMD's heading in README and its options, one a line.
readme_gaps() {
    local heading name alias kind group tok
    heading=$(grep -m1 -E "^### \`ggprof $2( |\`)" "$1")
    [ -n "$heading" ] || { echo "no heading"; return; }
    local toks
    toks=$(grep -oE -- '(^|[[ |])--?[A-Za-z][-A-Za-z0-9]*' <<< "${heading#*ggprof $2}" | sed 's/^[[ |]//' | sort -u)
    local known=" " window=0
    while read -r name alias kind group; do
        [ -n "$name" ] || continue
        known="$known$name $alias "
        if [ "$group" = window ]; then window=1; continue; fi
        grep -qxF -- "$name" <<< "$toks" || { [ "$alias" != - ] && grep -qxF -- "$alias" <<< "$toks"; } ||
            echo "$name missing"
    done <<< "$3"
    if [ $window = 1 ]; then
        grep -qF '[WINDOW]' <<< "$heading" || echo "[WINDOW] missing"
    else
        grep -qF '[WINDOW]' <<< "$heading" && echo "[WINDOW] but no window options"
    fi
    for tok in $toks; do
        case "$known" in *" $tok "*) ;; *) echo "$tok is not an option of the parser" ;; esac
    done
}

for c in "${CMDS[@]}"; do
    opts=$("$GGPROF" help --options "$c" 2> "$OUT/$c.options.err")
    expect "$c: help --options exits 0 (the command parses with a table)" "$?" 0
    help=$("$GGPROF" "$c" --help)
    expect "$c: --help equals help $c" "$(md5sum <<< "$help")" "$("$GGPROF" help "$c" | md5sum)"
    expect "$c: --help's first line is its usage" "$(head -n 1 <<< "$help" | cut -d' ' -f1-3)" "usage: ggprof $c"
    expect "$c: every option of the table is in --help (line and synopsis)" "$(help_gaps "$opts" "$help")" ""

    # The parser accepts each one: without its value, it asks for it; a flag passes parsing on to a bad option.
    bad=""
    while read -r name alias kind group; do
        [ -n "$name" ] || continue
        for o in $name $([ "$alias" != - ] && echo "$alias"); do
            if [ "$kind" = flag ]; then
                want="unknown option '--no-such-option-zz'"
                err=$("$GGPROF" "$c" "$o" --no-such-option-zz 2>&1 > /dev/null)
            else
                want="$o needs a value"
                err=$("$GGPROF" "$c" "$o" 2>&1 > /dev/null)
            fi
            rc=$?
            [ $rc = 2 ] && grep -qF -- "$want" <<< "$err" || bad="$bad $o"
        done
    done <<< "$opts"
    expect "$c: the parser accepts every option of the table" "$bad" ""

    if is_internal "$c"; then
        expect "$c: internal, no README heading" "$(grep -c -E "^### \`ggprof $c( |\`)" "$README")" 0
    else
        expect "$c: README's heading names exactly the parser's options" "$(readme_gaps "$README" "$c" "$opts")" ""
    fi
done

# The comparisons find a gap: record's help without its --metrics line, and a README whose record heading lacks
# --metrics.
opts=$("$GGPROF" help --options record)
expect "record takes --metrics" "$(grep -c '^--metrics ' <<< "$opts")" 1
planted=$("$GGPROF" record --help | grep -v -- '^  --metrics ')
expect "a help without --metrics's line is caught" "$(help_gaps "$opts" "$planted" | cut -d' ' -f1)" "--metrics"
sed '/^### `ggprof record /s/ \[--metrics \[HOST:\]PORT\]//' "$README" > "$OUT/README.planted.md"
expect "the planted README lacks --metrics in record's heading" \
    "$(grep -m1 '^### `ggprof record ' "$OUT/README.planted.md" | grep -c -e '--metrics')" 0
expect "a README heading without --metrics is caught" "$(readme_gaps "$OUT/README.planted.md" record "$opts")" \
    "--metrics missing"
sed '/^### `ggprof top /s/\[--window SEC\]/[--window SEC] [--interval S]/' "$README" > "$OUT/README.extra.md"
expect "a README heading naming an option the parser lacks is caught" \
    "$(readme_gaps "$OUT/README.extra.md" top "$("$GGPROF" help --options top)")" "--interval is not an option of the parser"
