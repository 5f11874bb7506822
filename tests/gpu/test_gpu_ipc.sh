#!/bin/bash
# test_gpu_ipc.sh — device-resident rings on a real GPU (skipped where there
# is none): two clients at once each take 60 batches from a placement=gpu
# stream through CUDA IPC and compare them with the same request served
# through a host ring (labels equal, pixels within 2/255); then a client
# killed with SIGKILL while it holds every device slot is reclaimed (streams
# and ring memory back to what they were) and a new client is served; then
# the device-ring lifetimes: 10 device streams closed with a copy from
# them still in flight (the bytes right, the client's CUDA context usable),
# a stream failed under a held batch (its dataset removed: the held batch
# still reads right until CLOSE_STREAM, and the daemon's memory comes back),
# and 30 device batches across a SIGKILL and restart of feederd (reconnect:
# both streams resume at their next batch and still agree).
. "$FEEDER_SOURCE/tests/e2e/lib.sh"
ipc=$build/tests/gpu/gpu_ipc_client
[ -x "$ipc" ] || skip "gpu_ipc_client is not built (no CUDA in this build)"
make_dataset imgs 48 4 9
# Does feederd find a GPU here? It refuses to start without one.
"$feederd" --config /dev/null --socket "$tmp/probe.sock" --datasets "$datasets" --gpu 0 \
	>"$tmp/probe.log" 2>&1 &
probe=$!
for _ in $(seq 100); do
	[ -S "$tmp/probe.sock" ] && break
	kill -0 $probe 2>/dev/null || break
	sleep 0.05
done
if ! kill -0 $probe 2>/dev/null; then
	wait $probe
	skip "feederd has no GPU here: $(grep -o 'cannot start.*' "$tmp/probe.log")"
fi
kill -TERM $probe; wait $probe
start_daemon --gpu 0
"$ipc" --socket "$sock" --dataset imgs check 60 >"$tmp/c1.log" 2>&1 &
p1=$!
"$ipc" --socket "$sock" --dataset imgs check 60 >"$tmp/c2.log" 2>&1 &
p2=$!
bg_pids=($p1 $p2)
wait $p1; r1=$?
wait $p2; r2=$?
bg_pids=()
[ $r1 = 77 ] && skip "$(cat "$tmp/c1.log")"
[ $r1 = 0 ] || fail "client 1: $(cat "$tmp/c1.log")"
[ $r2 = 0 ] || fail "client 2: $(cat "$tmp/c2.log")"
cat "$tmp/c1.log" "$tmp/c2.log"
"$feederctl" --socket "$sock" status --json > "$tmp/before.json" || fail "feederctl status"
"$ipc" --socket "$sock" --dataset imgs hold >"$tmp/hold.log" 2>&1 &
holder=$!
bg_pids=($holder)
for _ in $(seq 200); do grep -q HOLDING "$tmp/hold.log" && break; sleep 0.05; done
grep -q HOLDING "$tmp/hold.log" || fail "holding client: $(cat "$tmp/hold.log")"
kill -9 $holder; wait $holder 2>/dev/null
bg_pids=()
ok=
for _ in $(seq 100); do
	"$feederctl" --socket "$sock" status --json > "$tmp/after.json" || fail "feederctl status"
	[ "$(json_get "$tmp/after.json" streams)" = "$(json_get "$tmp/before.json" streams)" ] &&
	[ "$(json_get "$tmp/after.json" memory_used)" = "$(json_get "$tmp/before.json" memory_used)" ] &&
		{ ok=1; break; }
	sleep 0.05
done
[ -n "$ok" ] || fail "the killed client's device stream was not reclaimed: $(cat "$tmp/after.json")"
"$ipc" --socket "$sock" --dataset imgs check 10 >"$tmp/c3.log" 2>&1 || fail "after the kill: $(cat "$tmp/c3.log")"

# Closing with a copy in flight.
"$ipc" --socket "$sock" --dataset imgs close 10 >"$tmp/close.log" 2>&1 || fail "close: $(cat "$tmp/close.log")"
cat "$tmp/close.log"

# A stream that fails under a held batch: its dataset is removed.
cp -r "$datasets/imgs" "$datasets/doomed"
kill -HUP "$daemon_pid"
sleep 0.3
"$ipc" --socket "$sock" --dataset doomed fail >"$tmp/fail.log" 2>&1 &
fp=$!
bg_pids=($fp)
for _ in $(seq 200); do grep -q HOLDING "$tmp/fail.log" && break; sleep 0.05; done
grep -q HOLDING "$tmp/fail.log" || fail "failing client: $(cat "$tmp/fail.log")"
rm -rf "$datasets/doomed"
wait $fp || fail "failed stream: $(cat "$tmp/fail.log")"
bg_pids=()
cat "$tmp/fail.log"
ok=
for _ in $(seq 100); do
	"$feederctl" --socket "$sock" status --json > "$tmp/after2.json" || fail "feederctl status"
	[ "$(json_get "$tmp/after2.json" memory_used)" = "$(json_get "$tmp/before.json" memory_used)" ] &&
		{ ok=1; break; }
	sleep 0.05
done
[ -n "$ok" ] || fail "the failed stream's ring was not freed after CLOSE: $(cat "$tmp/after2.json")"

# Across a restart of feederd.
"$ipc" --socket "$sock" --dataset imgs reconnect 30 >"$tmp/rc.log" 2>&1 &
rp=$!
bg_pids=($rp)
for _ in $(seq 400); do grep -q HALF "$tmp/rc.log" && break; sleep 0.05; done
grep -q HALF "$tmp/rc.log" || fail "reconnecting client: $(cat "$tmp/rc.log")"
kill -9 "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
start_daemon --gpu 0
wait $rp || fail "across the restart: $(cat "$tmp/rc.log")"
bg_pids=()
cat "$tmp/rc.log"
stop_daemon
echo "ok: 2 clients x 60 device batches checked against host batches; a killed holder reclaimed;" \
	"10 closes with copies in flight; a failed stream's held batch intact; 30 batches across a restart"
