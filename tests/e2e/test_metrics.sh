#!/usr/bin/env bash
# test_metrics.sh — Prometheus metrics: feederd with
# metrics_listen serves /metrics over real HTTP; the text parses with the
# prometheus_client text parser; counters only grow across scrapes (also
# when a stream ends) and follow a running stream; 404/405 for anything but
# GET /metrics; abusive clients (40 idle connections, 100 KB of headers,
# garbage) are refused or timed out by the listener while a stream's
# batches keep coming at their rate; the same over a unix socket. Without
# a remote dataset no feeder_cache_ line appears and feederctl status
# shows no shard cache.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
py=$(find_python prometheus_client) \
	|| skip "python3-prometheus-client is not installed (tools/install-deps installs it): $py"
make_images small 24 2 5
start_metrics_daemon

spawn_client "$tmp/dw.err" datawait small 100000 5 16 4
dwp=$spawned

"$py" - "$port" "$sock" "$feederctl" "$dwp" <<'PY' || fail "metrics checks"
import json, os, signal, socket, subprocess, sys, time, urllib.request, urllib.error
from prometheus_client.parser import text_string_to_metric_families

port, sock, feederctl, dwp = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
url = f"http://127.0.0.1:{port}/metrics"

def scrape():
    with urllib.request.urlopen(url, timeout=5) as r:
        assert r.status == 200, r.status
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
        text = r.read().decode()
    # no remote dataset here: the shard cache's lines stay out
    assert "feeder_cache_" not in text, [l for l in text.splitlines() if "feeder_cache_" in l]
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = s.name + "".join(f",{k}={v}" for k, v in sorted(s.labels.items()))
            out[key] = (fam.type, s.value)
    return out

def batches_sent():
    out = subprocess.run([feederctl, "--socket", sock, "streams", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return sum(s["batches_sent"] for s in json.loads(out)["streams"])

time.sleep(1.5)
a = scrape(); time.sleep(1.2); b = scrape(); time.sleep(1.2); c = scrape()
ds = ",dataset=small,pipeline=jpeg"
s, streams = "feeder_dataset_samples_total" + ds, "feeder_dataset_streams" + ds
for k in ("feeder_up", "feeder_samples_total", "feeder_batches_total", "feeder_workers_busy_ratio",
          "feeder_worker_seconds_total,stage=decode", "feeder_ring_memory_bytes", s, streams,
          "feeder_trainer_wait_seconds_total" + ds, "feeder_trainer_compute_seconds_total" + ds):
    assert k in c, (k, sorted(c))
for k, (t, v) in c.items():
    if t == "counter":
        assert a.get(k, (t, 0))[1] <= b.get(k, (t, 0))[1] <= v, (k, a.get(k), b.get(k), v)
assert a[s][1] < b[s][1] < c[s][1], (a[s], b[s], c[s])
assert c[streams][1] == 1
assert c["feeder_trainer_compute_seconds_total" + ds][1] > 0
print(f"3 scrapes: samples {a[s][1]:.0f} -> {b[s][1]:.0f} -> {c[s][1]:.0f}, counters monotonic")

# and feederctl status shows no shard cache, its figures all 0
st = subprocess.run([feederctl, "--socket", sock, "status"], capture_output=True, text=True,
                    check=True).stdout
assert "samples/s" in st and "shard cache" not in st and "fetched" not in st, st
cache = json.loads(subprocess.run([feederctl, "--socket", sock, "status", "--json"],
                                  capture_output=True, text=True, check=True).stdout)["cache"]
assert set(cache) == {"bytes", "limit", "peak_bytes", "hits", "misses", "fetches",
                      "fetched_bytes", "retries", "failures", "wait_seconds"}, cache
assert not any(cache.values()), cache

for path, method, want in (("/", "GET", 404), ("/metrics", "POST", 405)):
    try:
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                                      method=method, data=b"x" if method == "POST" else None), timeout=5)
        raise AssertionError(f"{method} {path} answered 200")
    except urllib.error.HTTPError as e:
        assert e.code == want, (path, method, e.code)

# the stream's rate undisturbed
b0, t0 = batches_sent(), time.time(); time.sleep(2); base = (batches_sent() - b0) / (time.time() - t0)
idle = []
for _ in range(40):
    try:
        idle.append(socket.create_connection(("127.0.0.1", int(port)), timeout=5))
    except OSError:
        break  # refused: the listener's limit
def abuse(request):  # not served; the connection, and the first bytes of the answer
    c = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    c.sendall(request)
    try:
        answer = c.recv(200)
    except (ConnectionResetError, socket.timeout):
        answer = b""
    assert not answer.startswith(b"HTTP/1.1 200"), answer
    return c, answer
big, reply = abuse(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
junk, jr = abuse(b"\x00\x01garbage\r\n\r\n")
b1, t1 = batches_sent(), time.time(); time.sleep(2); during = (batches_sent() - b1) / (time.time() - t1)
print(f"stream: {base:.0f} batches/s before, {during:.0f} during the abuse "
      f"({len(idle)} idle connections held, big headers: {reply[:30]!r}, garbage: {jr[:30]!r})")
assert during >= 0.5 * base, (base, during)
for s_ in idle + [big, junk]:
    s_.close()
time.sleep(0.5)
d = scrape()   # served again once they are gone

# a stream that ends keeps its counts
os.kill(dwp, signal.SIGTERM)
time.sleep(2.5)
e = scrape()
assert e[s][1] >= d[s][1], (d[s], e[s])
assert e[streams][1] == 0, e
print(f"after the stream ended: samples {e[s][1]:.0f} (was {d[s][1]:.0f}), 0 streams")
PY
stop_daemon || fail "$daemon_why"

# the same over a unix socket
start_daemon --metrics-listen "$tmp/metrics.sock" || fail "$daemon_why"
[ -S "$tmp/metrics.sock" ] || fail "no unix metrics socket"
"$py" - "$tmp/metrics.sock" <<'PY' || fail "unix socket scrape"
import socket, sys
from prometheus_client.parser import text_string_to_metric_families
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: feederd\r\nConnection: close\r\n\r\n")
data = b"".join(iter(lambda: s.recv(65536), b""))  # to the end
head, _, body = data.partition(b"\r\n\r\n")
assert head.startswith(b"HTTP/1.1 200"), head
names = {f.name for f in text_string_to_metric_families(body.decode())}
assert {"feeder_up", "feeder_samples", "feeder_worker_seconds"} <= names, names
print(f"unix socket: {len(names)} metric families")
PY
stop_daemon || fail "$daemon_why"
[ -e "$tmp/metrics.sock" ] && fail "the unix metrics socket was left behind"
echo "PASS"
