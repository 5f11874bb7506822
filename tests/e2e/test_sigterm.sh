#!/bin/bash
# test_sigterm.sh — SIGTERM while a client streams: feederd tells the client
# (which sees FEEDER_ECLOSED, not a hang) and exits 0 within 2 s.
. "$(dirname "$0")/lib.sh"
make_dataset imgs 24 3 4
start_daemon
"$client" "${client_args[@]}" until-closed imgs >"$tmp/client.log" 2>&1 &
c=$!
bg_pids=($c)
for _ in $(seq 200); do grep -q STREAMING "$tmp/client.log" && break; sleep 0.05; done
grep -q STREAMING "$tmp/client.log" || fail "client did not start streaming: $(cat "$tmp/client.log")"
start=$(date +%s.%N)
stop_daemon
end=$(date +%s.%N)
for _ in $(seq 100); do kill -0 "$c" 2>/dev/null || break; sleep 0.05; done
wait "$c" || fail "client: $(cat "$tmp/client.log")"
bg_pids=()
cat "$tmp/client.log"
echo "ok: feederd exited 0 after SIGTERM in $(python3 -c "print(round($end - $start, 2))") s"
