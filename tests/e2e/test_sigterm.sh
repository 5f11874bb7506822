#!/bin/bash
# test_sigterm.sh — SIGTERM while a client streams: feederd tells the client
# (which sees FEEDER_ECLOSED, not a hang) and exits 0 within 2 s, at once
# when its only client goes away although shutdown_drain would allow 10 s.
# Then SIGTERM while a client holds a batch and has others announced but
# not taken, and reads none of it: feederd waits shutdown_drain (1 s) and
# exits, and the held batch and the announced ones still have their bytes
# (a stop blanks no batch a trainer has or was promised).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images imgs 24 3 4
start_daemon --shutdown-drain 10 || fail "$daemon_why"
spawn_client "$tmp/client.log" survive imgs 1000000000 closed
wait_for "$tmp/client.log" STREAMING "$spawned"
start=$(date +%s.%N)
stop_daemon || fail "$daemon_why"
end=$(date +%s.%N)
wait_client "$spawned" "$tmp/client.log" 5
bg_pids=()
cat "$tmp/client.log"
took=$("$py" -c "print(round($end - $start, 2))")

start_daemon --shutdown-drain 1 || fail "$daemon_why"
spawn_client "$tmp/held.log" held-stop imgs
wait_for "$tmp/held.log" HOLDING "$spawned"
stop_daemon || fail "$daemon_why"
wait "$spawned" || fail "held-stop: $(cat "$tmp/held.log")"
bg_pids=()
cat "$tmp/held.log"
grep -q "waiting up to 1 s" "$tmp/feederd.log" || fail "feederd did not say it waits for its client"
echo "ok: feederd exited 0 after SIGTERM in $took s; held and announced batches kept their bytes"
