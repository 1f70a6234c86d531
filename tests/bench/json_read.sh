#!/usr/bin/env bash
# Benchmark (not a test): reading a 1M-record version-3 JSON profile (about 450 MB) with `ggprof report`;
# prints records/s and peak memory. Target: peak memory <= 512 MiB (the reader holds one record at a time).
# usage: tests/bench/json_read.sh [RECORDS]   (default 1000000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-1000000}
make -C "$ROOT" -s all
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Repeat the seed-format sample's records, shifted in time, as the seed's writer lays them out.
node -e '
    const fs = require("fs");
    const [src, dst, n] = [process.argv[1], process.argv[2], Number(process.argv[3])];
    const lines = fs.readFileSync(src, "utf8").split("\n");
    const recs = lines.filter(l => l.startsWith("    {\"type\"")).map(l => l.replace(/,$/, ""));
    const head = lines.slice(0, lines.indexOf("  \"records\": [") + 1).join("\n")
        .replace(/"total_records": \d+/, "\"total_records\": " + n);
    const fd = fs.openSync(dst, "w");
    fs.writeSync(fd, head + "\n");
    let buf = [];
    for (let i = 0; i < n; i++) {
        const shift = Math.floor(i / recs.length) * 1e9;
        buf.push(recs[i % recs.length].replace(/"start_ns": (\d+)/, (m, v) => "\"start_ns\": " + (Number(v) + shift)) +
                 (i + 1 < n ? "," : ""));
        if (buf.length === 10000) { fs.writeSync(fd, buf.join("\n") + "\n"); buf = []; }
    }
    if (buf.length) fs.writeSync(fd, buf.join("\n") + "\n");
    fs.writeSync(fd, "  ]\n}\n");
    fs.closeSync(fd);' "$ROOT/samples/traces/seed-v3.json" "$tmp/big.json" "$N"
size=$(stat -c %s "$tmp/big.json")
/usr/bin/time -f "%e %M" -o "$tmp/time" "$ROOT/build/bin/ggprof" report "$tmp/big.json" > "$tmp/report.txt"
read -r secs kb < "$tmp/time"
awk -v n="$N" -v s="$secs" -v kb="$kb" -v size="$size" 'BEGIN {
    printf "ggprof report on a %d-record v3 JSON (%.0f MB): %.1f s, %.0f records/s, peak memory %.0f MiB (target <= 512)\n",
           n, size / 1e6, s, n / s, kb / 1024 }'
grep -q "($N records" "$tmp/report.txt" || { echo "report did not count $N records" >&2; exit 1; }
