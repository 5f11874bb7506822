# s3_server.sh — a real S3 server for a test: moto on 127.0.0.1, on a free
# port, in the test's work folder, killed at exit with the test's other
# processes (lib.sh's bg_pids). Sourced after lib.sh.
#
#   s3_start [--auth]   start moto (its venv from tests/lib/moto_venv.sh;
#                       skip only when pip cannot reach PyPI) and export what
#                       every S3 tool reads: AWS_ENDPOINT_URL, the keys,
#                       AWS_REGION (and no profile, no config file). --auth:
#                       moto checks every request's SigV4 signature against
#                       the keys of an IAM user made for the test (without
#                       it, moto takes any signature)
#   s3_stop             kill it (a server gone mid-transfer)
#   s3_restart          start it again (after s3_stop) on the same port, the
#                       same keys; moto keeps everything in memory, so it
#                       comes back empty: push again what the test needs
#   s3_py ARGS...       tests/lib/python/s3_helper.py (boto3) on that server
#   s3_tool ARGS...     the C client's driver (tests/store/s3_tool)
# Variables: s3_port, s3_pid, s3_log, s3_venv.
s3_tool_exe=$build/tests/store/s3_tool
s3_port= s3_pid= s3_log=$tmp/moto.log s3_venv=

s3_py() { "$s3_venv/bin/python" "$src/tests/lib/python/s3_helper.py" "$@"; }
s3_tool() { "$s3_tool_exe" "$@"; }

s3_answers() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$s3_port/moto-api/data.json") || return 1
	[ "$code" != 000 ]
}

s3_start() {
	local auth=0 rc tries
	[ "${1:-}" = --auth ] && auth=1
	s3_venv=$("$src/tests/lib/moto_venv.sh")
	rc=$?
	[ $rc = 77 ] && skip "moto is not installed and pip cannot reach PyPI"
	[ $rc = 0 ] || fail "cannot make moto's virtual environment (tests/lib/moto_venv.sh)"
	for tries in 1 2 3; do
		s3_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		if [ $auth = 1 ]; then
			# The three IAM calls of s3_helper.py auth-user, then checks.
			spawn "$s3_log" env INITIAL_NO_AUTH_ACTION_COUNT=3 "$s3_venv/bin/moto_server" -H 127.0.0.1 -p "$s3_port"
		else
			spawn "$s3_log" "$s3_venv/bin/moto_server" -H 127.0.0.1 -p "$s3_port"
		fi
		s3_pid=$spawned
		wait_until 30 s3_answers && break
		kill -9 "$s3_pid" 2>/dev/null
		wait "$s3_pid" 2>/dev/null
		s3_pid=
	done
	[ -n "$s3_pid" ] || fail "moto_server did not answer on 127.0.0.1:$s3_port: $(tail -n 3 "$s3_log")"
	export AWS_ENDPOINT_URL=http://127.0.0.1:$s3_port AWS_REGION=us-east-1
	export AWS_ACCESS_KEY_ID=AKIAFEEDERTEST000000 AWS_SECRET_ACCESS_KEY=feeder-test-secret
	export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=$tmp/no-credentials
	unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_REGION FEEDER_S3_ADDRESSING
	if [ $auth = 1 ]; then
		local keys
		keys=$(s3_py auth-user) || fail "cannot make moto's IAM user"
		AWS_ACCESS_KEY_ID=${keys% *} AWS_SECRET_ACCESS_KEY=${keys#* }
	fi
}

s3_stop() {
	[ -n "$s3_pid" ] || return 0
	kill -9 "$s3_pid" 2>/dev/null
	wait "$s3_pid" 2>/dev/null
	s3_pid=
}

s3_restart() {
	[ -n "$s3_port" ] || fail "s3_restart before s3_start"
	s3_stop
	echo "--- s3_restart ---" >>"$s3_log"
	# The port was ours a moment ago: only a TIME_WAIT could hold it.
	spawn "$s3_log.restart" "$s3_venv/bin/moto_server" -H 127.0.0.1 -p "$s3_port"
	s3_pid=$spawned
	wait_until 30 s3_answers || fail "moto_server did not answer again on 127.0.0.1:$s3_port: $(tail -n 3 "$s3_log.restart")"
}
