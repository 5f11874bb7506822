#!/bin/bash
# test_sigterm.sh — SIGTERM while a client streams: feederd tells the client
# (which sees FEEDER_ECLOSED, not a hang) and exits 0 within 2 s, at once
# when its only client goes away although shutdown_drain would allow 10 s.
# Then SIGTERM while a client holds a batch and has others announced but
# not taken, and reads none of it: feederd waits shutdown_drain (1 s) and
# exits, and the held batch and the announced ones still have their bytes
# (a stop blanks no batch a trainer has or was promised).
. "$(dirname "$0")/lib.sh"
make_dataset imgs 24 3 4
# start_client LOG WORD COMMAND: an e2e_client in the background ($c), once
# it has printed WORD.
start_client() {
	"$client" "${client_args[@]}" "$3" imgs >"$1" 2>&1 &
	c=$!
	bg_pids=($c)
	for _ in $(seq 200); do grep -q "$2" "$1" && break; sleep 0.05; done
	grep -q "$2" "$1" || fail "client $3 did not start: $(cat "$1")"
}
start_daemon --shutdown-drain 10
start_client "$tmp/client.log" STREAMING until-closed
start=$(date +%s.%N)
stop_daemon
end=$(date +%s.%N)
for _ in $(seq 100); do kill -0 "$c" 2>/dev/null || break; sleep 0.05; done
wait "$c" || fail "client: $(cat "$tmp/client.log")"
bg_pids=()
cat "$tmp/client.log"
took=$(python3 -c "print(round($end - $start, 2))")

start_daemon --shutdown-drain 1
start_client "$tmp/held.log" HOLDING held-stop
stop_daemon
wait "$c" || fail "held-stop: $(cat "$tmp/held.log")"
bg_pids=()
cat "$tmp/held.log"
grep -q "waiting up to 1 s" "$tmp/feederd.log" || fail "feederd did not say it waits for its client"
echo "ok: feederd exited 0 after SIGTERM in $took s; held and announced batches kept their bytes"
