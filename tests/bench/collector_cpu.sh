#!/usr/bin/env bash
# Benchmark (not a test): the collector's CPU time per million records with record --metrics's live aggregates on
# and off (tests/bench/collector_cpu.c: a synthetic llama-server-shaped stream through the spill, then through the
# spill and collector/live.c). Prints seconds per million records and their ratio.
# usage: tests/bench/collector_cpu.sh [MILLIONS]     (default 20; run it on an idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MILLIONS=${1:-20}
make -C "$ROOT" -s all unit
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O2 -D_GNU_SOURCE -I"$ROOT/schema" -I"$ROOT/analyzer" -I"$ROOT/collector" -o "$tmp/collector_cpu" \
    "$ROOT/tests/bench/collector_cpu.c" "$ROOT/build/libggprof-core.a" -lsqlite3 -lz -lcjson -lm -lpthread -lmicrohttpd
"$tmp/collector_cpu" "$MILLIONS" "$tmp/spill"
