#!/usr/bin/env bash
# test_metrics_slow.sh — slow senders (slowloris) do not lock the scraper
# out of feederd's /metrics: 16 connections that trickle header bytes from
# 127.0.0.2 (a byte every 0.4 s, reconnecting when closed) while a scraper
# on 127.0.0.1 asks 10 times and must get 200 every time; each trickling
# connection is closed by its request deadline (5 s from the accept, the
# bytes it sends notwithstanding), not kept for ever. The same over the
# unix listener, where the slow sender is another user (nobody): run as
# root only, the rest of the test runs anyway.
. "$FEEDER_SOURCE/tests/lib/lib.sh"

# http.py slow TARGET SECONDS [SOURCE]: the 16 slow senders; prints the
# longest a connection lived, and how many it opened. http.py scrape TARGET:
# 10 scrapes 0.3 s apart; prints how many got 200.
cat > "$tmp/http.py" <<'PY'
import socket, sys, threading, time
mode, target = sys.argv[1], sys.argv[2]

def connect(source=None, timeout=None):
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        s.connect(target)
        return s
    host, port = target.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout, (source, 0) if source else None)

def sender():
    global longest, opened
    request = b"GET /metrics HTTP/1.1\r\nHost: feederd\r\n" + b"X-Slow: 1\r\n" * 10000
    while time.time() < end:
        try:
            s = connect(source)
            s.settimeout(0.4)
        except OSError:
            time.sleep(0.05)
            continue
        t0 = time.time()
        with lock:
            opened += 1
        try:
            for b in request:
                if time.time() >= end:
                    break
                s.send(bytes([b]))
                try:
                    if s.recv(100) == b"":
                        break          # closed by the daemon
                except socket.timeout:
                    pass               # still open: the next byte
        except OSError:
            pass
        lived = time.time() - t0
        s.close()
        if lived < 0.2:
            time.sleep(0.1)    # refused at once: no busy loop on a shared machine
        if time.time() < end:  # cut by the daemon, not by our end
            with lock:
                longest = max(longest, lived)

if mode == "slow":
    end = time.time() + float(sys.argv[3])
    source = sys.argv[4] if len(sys.argv) > 4 else None
    longest, opened, lock = 0.0, 0, threading.Lock()
    threads = [threading.Thread(target=sender) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{longest:.1f} {opened}")
    sys.exit(0)
served = 0
for _ in range(10):
    try:
        s = connect(timeout=2)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: feederd\r\nConnection: close\r\n\r\n")
        reply = b"".join(iter(lambda: s.recv(65536), b""))  # to the end
        if reply.startswith(b"HTTP/1.1 200") and b"feeder_up 1" in reply:
            served += 1
        else:
            print("reply:", reply[:60], file=sys.stderr)
        s.close()
    except OSError as e:
        print("scrape:", e, file=sys.stderr)
    time.sleep(0.3)
print(served)
PY

# attack TARGET WHO...: slow senders for 6.5 s (as WHO: a command prefix),
# the scraper after 1 s of it; checks both.
attack() {
	local target=$1; shift
	spawn "$tmp/slow.out" "$@" "$py" "$tmp/http.py" slow "$target" 6.5 ${from:+"$from"}
	local sp=$spawned
	sleep 1
	local served
	served=$("$py" "$tmp/http.py" scrape "$target" 2>"$tmp/scrape.err") || fail "scrape: $served"
	wait $sp || fail "slow senders: $(cat "$tmp/slow.out")"
	read -r longest opened <"$tmp/slow.out"
	echo "$target: scraper served $served of 10; slow senders opened $opened connections," \
		"the longest cut after $longest s"
	[ "$served" = 10 ] || fail "the scraper was served $served of 10 times: $(cat "$tmp/scrape.err")"
	# 5 s deadline, reaped within a moment, plus one 0.4 s wait for a byte
	awk -v l="$longest" 'BEGIN { exit !(l > 4.5 && l < 6.5) }' \
		|| fail "a trickling connection lived $longest s (deadline 5 s)"
}

start_metrics_daemon
from=127.0.0.2 attack "127.0.0.1:$port" env
stop_daemon || fail "$daemon_why"

start_daemon --metrics-listen "$tmp/metrics.sock" || fail "$daemon_why"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" != 0 ]; then
	echo "not root: the unix listener's slow sender cannot be another user; not run"
else
	# the interpreter found may live where nobody cannot run it
	"${nobody[@]}" "$py" -c pass 2>/dev/null || py=/usr/bin/python3
	chmod 755 "$tmp"
	chmod 666 "$tmp/metrics.sock"
	if "${nobody[@]}" "$py" -c pass 2>/dev/null; then
		from= attack "$tmp/metrics.sock" "${nobody[@]}"
	else
		echo "no Python that user nobody may run: the unix listener's case not run"
	fi
fi
stop_daemon || fail "$daemon_why"
echo "PASS"
