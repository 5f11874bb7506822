#!/bin/bash
# test_daemon_restart.sh [KILL|TERM] — feederd killed with SIGKILL mid-epoch,
# twice, or stopped with SIGTERM six times the way systemctl restart does
# (wait for it to exit, start a new one), and restarted on the same socket:
# a libfeeder client with reconnecting on
# (feeder_set_reconnect) goes on at the exact batch after the last one it
# got, and across the two epochs every sample comes exactly once. The batch
# it holds across a restart keeps its bytes, and so do the batches announced
# before a SIGTERM (read from the old ring after GOODBYE), which a stop
# does not blank; a ring of a lost connection is let go once no batch of it
# is held (at most 2 ring memfds open and mapped at any time). After SIGTERM
# feederd waits for its client to let go (shutdown_drain 10 s here) but exits
# as soon as it has, within 2 s. Samples
# carry unique labels (packed from a list: label = sample number), and each
# one's bytes are hashed, so the disturbed run is compared line by line with
# an undisturbed one (streams are pure functions of their options) and each
# epoch's labels must be a permutation of 0..N-1.
sig=${1:-KILL}
. "$FEEDER_SOURCE/tests/lib/lib.sh"
case $sig in
KILL) stops="6 23" ;;
TERM) stops="3 7 11 15 19 23" ;;
*) fail "usage: test_daemon_restart.sh [KILL|TERM]" ;;
esac
restart_client=$build/tests/fault/restart_client
need_exe "$restart_client"

n=40
make_images uniq $n 4 11 --unique --resize-shorter 48
start_daemon --shutdown-drain 10 || fail "$daemon_why"
run() { "$restart_client" --socket "$sock" --dataset uniq --epochs 2 --batch 2 "$@"; }
run --out "$tmp/ref.txt" >"$tmp/ref.log" 2>&1 || fail "reference run: $(cat "$tmp/ref.log")"
# 40 samples, batch 2: 20 batches an epoch. A stopped daemon's client reads
# up to 4 batches more (the one it holds and 3 announced ring slots), so
# the last stop leaves it far more than that to fetch from the next daemon.
[ "$(wc -l < "$tmp/ref.txt")" = 40 ] || fail "reference run: $(wc -l < "$tmp/ref.txt") batches, not 40"

spawn "$tmp/run.log" run --out "$tmp/run.txt" --delay-ms 60 --reconnect 20000
cpid=$spawned
# has FILE N: FILE holds at least N lines (batches).
has() { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
kills=0
for at in $stops; do
	wait_until 8 has "$tmp/run.txt" $at || fail "the client stopped at $(wc -l < "$tmp/run.txt") batches"
	if [ $sig = KILL ]; then
		kill_daemon
	else
		stop_daemon || fail "$daemon_why"
	fi
	kills=$((kills + 1))
	got=$(wc -l < "$tmp/run.txt")
	sleep 0.3 # the client finds nobody there and backs off
	start_daemon --shutdown-drain 10 || fail "$daemon_why"
	echo "SIG$sig to feederd after the client had $got batches; restarted"
	# Each stop must meet a client that came back from the one before.
	wait_until 10 grep -q "reconnected ($kills)" "$tmp/run.log" ||
		fail "the client did not reconnect after stop $kills"
done
wait "$cpid"; rc=$?
bg_pids=()
cat "$tmp/run.log"
[ $rc = 0 ] || fail "client exited $rc"
grep -q "reconnects $kills\$" "$tmp/run.log" || fail "expected $kills reconnects"
grep -q "^ring fds [12] maps [12]\$" "$tmp/run.log" ||
	fail "old rings were kept: $(grep '^ring fds' "$tmp/run.log") after $kills restarts"
cmp -s "$tmp/ref.txt" "$tmp/run.txt" || {
	diff "$tmp/ref.txt" "$tmp/run.txt" | head -20
	fail "the run with restarts delivered other batches than the undisturbed one"
}
for e in 0 1; do
	labels=$(awk -v e=$e '$1 == e { for (i = 3; i <= NF; i++) { split($i, a, ":"); print a[1] } }' \
		"$tmp/run.txt" | sort -n | tr '\n' ' ')
	[ "$labels" = "$(seq 0 $((n - 1)) | tr '\n' ' ')" ] ||
		fail "epoch $e: labels are not each sample exactly once: $labels"
done

# A daemon that does not come back: the client gives up after its reconnect
# time with a sentence that says so, not a hang.
spawn "$tmp/gone.log" run --out "$tmp/gone.txt" --delay-ms 60 --reconnect 1500
cpid=$spawned
wait_until 8 has "$tmp/gone.txt" 3
kill_daemon
t0=$(date +%s%N)
wait "$cpid"; rc=$?
bg_pids=()
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 1 ] || fail "client with nobody to reconnect to exited $rc: $(cat "$tmp/gone.log")"
grep -q "went away and could not be reached again" "$tmp/gone.log" ||
	fail "no clear error when the daemon stays away: $(cat "$tmp/gone.log")"
[ $ms -lt 6000 ] || fail "giving up took $ms ms with a 1500 ms reconnect time"
grep "next after" "$tmp/gone.log"
echo "ok: feederd stopped (SIG$sig) $kills times mid-epoch; 2 epochs x $n samples delivered exactly once," \
	"identical to the undisturbed run (labels and content hashes), 0 lost, 0 duplicated;" \
	"a daemon that stays away: clear error after $ms ms"
