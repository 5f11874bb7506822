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
. "$FEEDER_SOURCE/tests/lib/lib.sh"
ipc=$build/tests/gpu/gpu_ipc_client
[ -x "$ipc" ] || skip "gpu_ipc_client is not built (no CUDA in this build)"
make_images imgs 48 4 9
# feederd refuses to start without a GPU.
if ! start_daemon --gpu 0; then
	grep -q "cannot start" "$daemon_log" || fail "$daemon_why"
	skip "feederd has no GPU here: $(grep -o 'cannot start.*' "$daemon_log")"
fi
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
spawn "$tmp/hold.log" "$ipc" --socket "$sock" --dataset imgs hold
holder=$spawned
wait_for "$tmp/hold.log" HOLDING "$holder"
kill -9 $holder; wait $holder 2>/dev/null
bg_pids=()
# back_to KEY...: feederctl status shows each KEY as in before.json.
back_to() {
	local k
	"$feederctl" --socket "$sock" status --json > "$tmp/after.json" || fail "feederctl status"
	for k; do [ "$(json_get "$tmp/after.json" $k)" = "$(json_get "$tmp/before.json" $k)" ] || return 1; done
}
wait_until 5 back_to streams memory_used || fail "the killed client's device stream was not reclaimed: $(cat "$tmp/after.json")"
"$ipc" --socket "$sock" --dataset imgs check 10 >"$tmp/c3.log" 2>&1 || fail "after the kill: $(cat "$tmp/c3.log")"

# Closing with a copy in flight.
"$ipc" --socket "$sock" --dataset imgs close 10 >"$tmp/close.log" 2>&1 || fail "close: $(cat "$tmp/close.log")"
cat "$tmp/close.log"

# A stream that fails under a held batch: its dataset is removed.
cp -r "$datasets/imgs" "$datasets/doomed"
kill -HUP "$daemon_pid"
sleep 0.3
spawn "$tmp/fail.log" "$ipc" --socket "$sock" --dataset doomed fail
fp=$spawned
wait_for "$tmp/fail.log" HOLDING "$fp"
rm -rf "$datasets/doomed"
wait $fp || fail "failed stream: $(cat "$tmp/fail.log")"
bg_pids=()
cat "$tmp/fail.log"
wait_until 5 back_to memory_used || fail "the failed stream's ring was not freed after CLOSE: $(cat "$tmp/after.json")"

# Across a restart of feederd.
spawn "$tmp/rc.log" "$ipc" --socket "$sock" --dataset imgs reconnect 30
rp=$spawned
wait_until 20 grep -q HALF "$tmp/rc.log" || fail "reconnecting client: $(cat "$tmp/rc.log")"
kill_daemon
start_daemon --gpu 0 || fail "$daemon_why"
wait $rp || fail "across the restart: $(cat "$tmp/rc.log")"
bg_pids=()
cat "$tmp/rc.log"
stop_daemon || fail "$daemon_why"
echo "ok: 2 clients x 60 device batches checked against host batches; a killed holder reclaimed;" \
	"10 closes with copies in flight; a failed stream's held batch intact; 30 batches across a restart"
