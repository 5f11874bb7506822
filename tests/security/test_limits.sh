#!/bin/bash
# test_limits.sh — each configured limit of feederd, one daemon per limit:
# max_streams_per_client, max_slots, memory_limit, max_message; and the
# sealed ring memfd. The offender gets a clear error (limits_client checks
# the code and the sentence), everyone else is served, the daemon lives on.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
limits=$build/tests/security/limits_client
need_exe "$limits"
make_images uniq 20 3 5 --unique --resize-shorter 48

run_limit() { # NAME DAEMON-FLAGS... -- CLIENT-ARGS...
	local name=$1 flags=()
	shift
	while [ "$1" != -- ]; do flags+=("$1"); shift; done
	shift
	start_daemon "${flags[@]}" || fail "$daemon_why"
	"$limits" "$sock" "$1" uniq "${@:2}" || fail "$name"
	daemon_alive
	stop_daemon || fail "$daemon_why"
}
run_limit streams --max-streams-per-client 3 -- streams 3
run_limit slots --max-slots 5 -- slots 5
run_limit memory --memory-limit 4M -- memory 4
run_limit message --max-message 512 -- message 512
run_limit seals -- seals
grep -q "over\|limit\|does not fit" "$tmp/feederd.log" || fail "no refusal was logged"
echo "PASS: limits"
