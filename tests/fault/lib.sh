# lib.sh — sourced by the fault test scripts in this folder, after
# tests/e2e/lib.sh (daemon, datasets, e2e_client): helpers to wait for a
# background client and to read the one result line of `e2e_client survive`.

# wait_for FILE PATTERN PID: until FILE holds PATTERN (10 s), while PID lives.
wait_for() {
	for _ in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || break
		sleep 0.05
	done
	grep -q "$2" "$1" 2>/dev/null || fail "no '$2' from pid $3: $(cat "$1")"
}

# wait_client PID LOG SECONDS: the client must exit 0 within SECONDS.
wait_client() {
	local i
	for i in $(seq $(($3 * 20))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$1" 2>/dev/null && fail "client still running after $3 s: $(cat "$2")"
	wait "$1" || fail "client failed: $(cat "$2")"
}

# survive_field LOG KEY: a field of the "survive: k=v ... message=TEXT" line
# (message is the rest of the line).
survive_field() {
	local line
	line=$(grep '^survive:' "$1" | tail -n 1)
	[ -n "$line" ] || fail "no survive line in $1: $(cat "$1")"
	if [ "$2" = message ]; then
		echo "${line#*message=}"
	else
		echo "$line" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"
	fi
}

# daemon_alive: feederd still runs and answers status.
daemon_alive() {
	kill -0 "$daemon_pid" 2>/dev/null || fail "feederd died"
	"$feederctl" --socket "$sock" --timeout 5000 status --json >"$tmp/status.json" \
		|| fail "feederctl status does not answer"
}

# samples_checked LOG...: the samples `e2e_client epoch` checked, summed.
samples_checked() {
	awk '{ for (i = 1; i < NF - 1; i++) if ($(i + 1) == "samples" && $(i + 2) == "checked") s += $i }
	     END { print s + 0 }' "$@"
}
