#!/usr/bin/env bash
# Benchmark (not a test): the cost of a 4 KiB ring message on the producing thread during the first lap of a
# slot (tests/bench/ring_write.c says what it compares). x86-64 only (it reads the time-stamp counter).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O2 -D_GNU_SOURCE -I"$ROOT/schema" -o "$tmp/ring_write" "$ROOT/tests/bench/ring_write.c" \
    "$ROOT/schema/ring.c" "$ROOT/schema/wire.c"
"$tmp/ring_write" "$@"
