#!/bin/bash
# test_notify.sh — feederd speaks systemd's notify protocol: given a
# NOTIFY_SOCKET of the test's own (a datagram socket read by a small python
# receiver) and a watchdog (WATCHDOG_USEC/WATCHDOG_PID), it sends READY=1,
# STATUS= lines, WATCHDOG=1 pings, and STOPPING=1 on SIGTERM.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images imgs 8 2 6
notify=$tmp/notify.sock
"$py" - "$notify" "$tmp/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(15)
with open(sys.argv[2], "w", buffering=1) as log:
    log.write("LISTENING\n")
    try:
        while True:
            msg = s.recv(4096).decode(errors="replace")
            log.write("".join(line + "\n" for line in msg.split("\n") if line))
            if "STOPPING=1" in msg:
                break
    except socket.timeout:
        log.write("TIMEOUT\n")
PY
recv=$!
bg_pids=($recv)
wait_until 5 grep -q LISTENING "$tmp/notify.log" 2>/dev/null
[ -S "$notify" ] || fail "notify receiver did not start"

# Started by hand: here READY=1, not an answer, says it serves. exec keeps
# the subshell's pid, so WATCHDOG_PID names feederd itself.
( export NOTIFY_SOCKET=$notify WATCHDOG_USEC=400000 WATCHDOG_PID=$BASHPID
  exec "$feederd" --config /dev/null --socket "$sock" --datasets "$datasets" --workers 1 ) \
	>>"$daemon_log" 2>&1 &
daemon_pid=$!
wait_until 10 grep -q '^READY=1' "$tmp/notify.log" || fail "no READY=1: $(cat "$tmp/notify.log")"
"$feederctl" --socket "$sock" status >/dev/null || fail "not serving after READY=1"
sleep 1 # at least two watchdog periods (WATCHDOG_USEC/2 = 0.2 s)
stop_daemon || fail "$daemon_why"
wait "$recv"
bg_pids=()
cat "$tmp/notify.log"
grep -q '^STATUS=.' "$tmp/notify.log" || fail "no STATUS= line"
grep -q '^STOPPING=1' "$tmp/notify.log" || fail "no STOPPING=1"
pings=$(grep -c '^WATCHDOG=1' "$tmp/notify.log")
[ "$pings" -ge 2 ] || fail "only $pings WATCHDOG=1 pings in 1 s with WatchdogSec=0.4s"
grep -m1 -e '^READY=1' -e '^STOPPING=1' "$tmp/notify.log" | grep -q '^READY=1' \
	|| fail "STOPPING=1 came before READY=1"
echo "ok: READY=1, STATUS=, $pings watchdog pings, STOPPING=1"
