# record --metrics is not held off by slow clients: while 20 connections that send a byte a second are open (from
# another address, then from the scraper's own), a scrape still gets the metrics, and the endpoint ends every slow
# connection (a whole request has a deadline, however often its bytes come; one address holds a few connections).
. "$(dirname "$0")/../lib.sh"
command -v curl > /dev/null || { not_ok "curl" "not installed (tests/deps.sh)"; exit 0; }
rm -f "$OUT/stop"
"$GGPROF" record -q -o "$OUT/m.db" --metrics 127.0.0.1:0 -- sh -c 'while [ ! -f "$0" ]; do sleep 0.2; done' \
    "$OUT/stop" > "$OUT/rec.log" 2>&1 &
rec=$!
addr=
for _ in $(seq 1 100); do
    addr=$(sed -n 's|^ggprof: record: metrics at http://\([^/]*\)/metrics$|\1|p' "$OUT/rec.log")
    [ -n "$addr" ] && break
    sleep 0.1
done
expect "record --metrics listens" "${addr%:*}" 127.0.0.1

# slow FROM N: N connections from address FROM, each sending a request one byte a second; prints "held K" once K of
# them are open (after 2 s), then "ended E of N": how many the endpoint closed within 40 s.
slow() {
    python3 - "$1" "$2" "${addr%:*}" "${addr##*:}" << 'PY'
import socket, sys, time
src, n, host, port = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
conns = []
for _ in range(n):
    s = socket.socket()
    s.bind((src, 0))
    s.connect((host, port))
    s.setblocking(False)
    conns.append(s)
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
open_ = set(range(n))
def tick(i):
    for k in list(open_):
        try:
            if conns[k].recv(1) == b"":
                open_.discard(k)
                continue
        except BlockingIOError:
            pass
        except OSError:
            open_.discard(k)
            continue
        try:
            conns[k].send(req[i:i + 1])
        except OSError:
            open_.discard(k)
t0 = time.monotonic()
i = 0
while time.monotonic() - t0 < 2:
    tick(i); i += 1; time.sleep(1)
print("held", len(open_), flush=True)
while open_ and time.monotonic() - t0 < 40:
    tick(i); i += 1; time.sleep(1)
print("ended", n - len(open_), "of", n, flush=True)
PY
}

# From another address: the per-address limit leaves the scraper room.
slow 127.0.0.2 20 > "$OUT/other.txt" &
cl=$!
for _ in $(seq 1 50); do grep -q held "$OUT/other.txt" && break; sleep 0.2; done
expect_ge "20 slow clients from 127.0.0.2: some are held open" "$(sed -n 's/^held //p' "$OUT/other.txt")" 1
code=$(curl -s --max-time 5 -o "$OUT/scrape1.txt" -w '%{http_code}' "http://$addr/metrics")
expect "... a scrape from 127.0.0.1 gets the metrics" "$code:$(grep -c '^# TYPE ggml_op_seconds_total ' "$OUT/scrape1.txt")" \
    "200:1"
wait "$cl"
expect "... and the endpoint ends every slow connection" "$(sed -n 's/^ended //p' "$OUT/other.txt")" "20 of 20"

# From the scraper's own address: its tries are refused while the address is full, until the deadline ends them.
slow 127.0.0.1 20 > "$OUT/same.txt" &
cl=$!
for _ in $(seq 1 50); do grep -q held "$OUT/same.txt" && break; sleep 0.2; done
expect_ge "20 slow clients from 127.0.0.1: some are held open" "$(sed -n 's/^held //p' "$OUT/same.txt")" 1
code=$(curl -s --retry 30 --retry-delay 1 --retry-all-errors --retry-max-time 30 --max-time 40 -o "$OUT/scrape2.txt" \
    -w '%{http_code}' "http://$addr/metrics")
expect "... a scrape from 127.0.0.1 gets the metrics (retried, within the deadline)" \
    "$code:$(grep -c '^# TYPE ggml_op_seconds_total ' "$OUT/scrape2.txt")" "200:1"
wait "$cl"
expect "... and the endpoint ends every slow connection" "$(sed -n 's/^ended //p' "$OUT/same.txt")" "20 of 20"

touch "$OUT/stop"
wait "$rec"
expect "record ends as the workload does" "$?" 0
