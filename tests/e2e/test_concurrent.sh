#!/bin/bash
# test_concurrent.sh — four clients stream a full epoch each at the same
# time (different seeds); every sample of every client is checked against the
# pipeline reference, and all four finish.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images imgs 24 3 2
start_daemon || fail "$daemon_why"
for seed in 1 2 3 4; do spawn_client "$tmp/client-$seed.log" epoch imgs "$seed"; done
for i in 0 1 2 3; do
	wait "${bg_pids[$i]}" || fail "client $((i + 1)): $(cat "$tmp/client-$((i + 1)).log")"
done
bg_pids=()
cat "$tmp"/client-*.log
stop_daemon || fail "$daemon_why"
echo "ok: four concurrent clients"
