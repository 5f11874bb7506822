#!/bin/bash
# test_concurrent.sh — four clients stream a full epoch each at the same
# time (different seeds); every sample of every client is checked against the
# pipeline reference, and all four finish.
. "$(dirname "$0")/lib.sh"
make_dataset imgs 24 3 2
start_daemon
pids=()
for seed in 1 2 3 4; do
	"$client" "${client_args[@]}" epoch imgs "$seed" >"$tmp/client-$seed.log" 2>&1 &
	pids+=($!)
done
bg_pids=("${pids[@]}")
for i in 0 1 2 3; do
	wait "${pids[$i]}" || fail "client $((i + 1)): $(cat "$tmp/client-$((i + 1)).log")"
done
bg_pids=()
cat "$tmp"/client-*.log
stop_daemon
echo "ok: four concurrent clients"
