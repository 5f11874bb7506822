#!/bin/bash
# test_sigkill.sh — a client killed with SIGKILL while it holds every slot of
# its stream: the daemon reclaims the stream and its ring memory, a client
# that streams meanwhile is not disturbed, and a new client is served.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images imgs 24 3 3
start_daemon || fail "$daemon_why"
spawn_client "$tmp/steady.log" survive imgs 1000000000 closed
steady=$spawned
wait_for "$tmp/steady.log" STREAMING "$steady"
"$feederctl" --socket "$sock" status --json > "$tmp/before.json" || fail "feederctl status"
mem_one=$(json_get "$tmp/before.json" memory_used)

spawn_client "$tmp/hold.log" hold imgs
holder=$spawned
wait_for "$tmp/hold.log" HOLDING "$holder"
"$feederctl" --socket "$sock" status --json > "$tmp/held.json" || fail "feederctl status"
[ "$(json_get "$tmp/held.json" streams)" = 2 ] || fail "expected 2 streams while holding: $(cat "$tmp/held.json")"
mem_two=$(json_get "$tmp/held.json" memory_used)
[ "$mem_two" -gt "$mem_one" ] || fail "ring memory did not grow with the second stream"

kill -9 "$holder"; wait "$holder" 2>/dev/null
reclaimed() {
	"$feederctl" --socket "$sock" status --json > "$tmp/after.json" || fail "feederctl status"
	[ "$(json_get "$tmp/after.json" streams)" = 1 ] &&
		[ "$(json_get "$tmp/after.json" memory_used)" = "$mem_one" ]
}
wait_until 5 reclaimed || fail "killed client's stream not reclaimed: $(cat "$tmp/after.json")"
kill -0 "$steady" 2>/dev/null || fail "steady client stopped: $(cat "$tmp/steady.log")"

run_client epoch imgs 9 || fail "a new client after the kill was not served"
stop_daemon || fail "$daemon_why"
wait "$steady" || fail "steady client: $(cat "$tmp/steady.log")"
bg_pids=()
cat "$tmp/steady.log"
echo "ok: killed client reclaimed (memory $mem_two -> $mem_one bytes), others kept streaming"
