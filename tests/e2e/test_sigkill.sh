#!/bin/bash
# test_sigkill.sh — a client killed with SIGKILL while it holds every slot of
# its stream: the daemon reclaims the stream and its ring memory, a client
# that streams meanwhile is not disturbed, and a new client is served.
. "$(dirname "$0")/lib.sh"
make_dataset imgs 24 3 3
start_daemon
"$client" "${client_args[@]}" until-closed imgs >"$tmp/steady.log" 2>&1 &
steady=$!
bg_pids=($steady)
for _ in $(seq 200); do grep -q STREAMING "$tmp/steady.log" && break; sleep 0.05; done
grep -q STREAMING "$tmp/steady.log" || fail "steady client did not start: $(cat "$tmp/steady.log")"
"$feederctl" --socket "$sock" status --json > "$tmp/before.json" || fail "feederctl status"
mem_one=$(json_get "$tmp/before.json" memory_used)

"$client" "${client_args[@]}" hold imgs >"$tmp/hold.log" 2>&1 &
holder=$!
bg_pids+=($holder)
for _ in $(seq 200); do grep -q HOLDING "$tmp/hold.log" && break; sleep 0.05; done
grep -q HOLDING "$tmp/hold.log" || fail "holding client did not get its slots: $(cat "$tmp/hold.log")"
"$feederctl" --socket "$sock" status --json > "$tmp/held.json" || fail "feederctl status"
[ "$(json_get "$tmp/held.json" streams)" = 2 ] || fail "expected 2 streams while holding: $(cat "$tmp/held.json")"
mem_two=$(json_get "$tmp/held.json" memory_used)
[ "$mem_two" -gt "$mem_one" ] || fail "ring memory did not grow with the second stream"

kill -9 "$holder"; wait "$holder" 2>/dev/null
ok=
for _ in $(seq 100); do
	"$feederctl" --socket "$sock" status --json > "$tmp/after.json" || fail "feederctl status"
	if [ "$(json_get "$tmp/after.json" streams)" = 1 ] &&
	   [ "$(json_get "$tmp/after.json" memory_used)" = "$mem_one" ]; then ok=1; break; fi
	sleep 0.05
done
[ -n "$ok" ] || fail "killed client's stream not reclaimed: $(cat "$tmp/after.json")"
kill -0 "$steady" 2>/dev/null || fail "steady client stopped: $(cat "$tmp/steady.log")"

run_client epoch imgs 9 || fail "a new client after the kill was not served"
stop_daemon
wait "$steady" || fail "steady client: $(cat "$tmp/steady.log")"
bg_pids=()
cat "$tmp/steady.log"
echo "ok: killed client reclaimed (memory $mem_two -> $mem_one bytes), others kept streaming"
