#!/bin/bash
# test_limits.sh — each configured limit of feederd, one daemon per limit:
# max_streams_per_client, max_slots, memory_limit, max_message; and the
# sealed ring memfd. The offender gets a clear error (limits_client checks
# the code and the sentence), everyone else is served, the daemon lives on.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
limits=$build/tests/security/limits_client
need_exe "$limits"
make_images uniq 20 3 5 --unique --resize-shorter 48

run_limit() { # "DAEMON-FLAGS" COMMAND [ARG]
	start_daemon $1 || fail "$daemon_why"
	"$limits" "$sock" "$2" uniq "${@:3}" || fail "$2"
	daemon_alive
	stop_daemon || fail "$daemon_why"
}
run_limit "--max-streams-per-client 3" streams 3
run_limit "--max-slots 5" slots 5
run_limit "--memory-limit 4M" memory 4
run_limit "--max-message 512" message 512
run_limit "" seals
grep -q "over\|limit\|does not fit" "$tmp/feederd.log" || fail "no refusal was logged"
echo "PASS: limits"
