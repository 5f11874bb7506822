# lib.sh — the shell test fixture, sourced by every shell test and benchmark
# script: where the build and the sources are, a private work folder removed
# on exit together with everything the script started, a feederd on a
# private socket, small datasets made by the generators and packer, the
# e2e_client helpers the end-to-end, fault and security tests share, and
# fail/skip. Tests exit 0 (pass), 1 (fail) or 77 (skip). Python: $py, or
# need_python for one with given modules (tests/lib/find_python.sh). The C
# tests' fixture is harness.c beside it, the Python tests' python/.
#
# Variables: src, build (FEEDER_SOURCE and FEEDER_BUILD, else this tree and
# its build/), here (the sourcing script's folder), tmp (the work folder),
# sock and datasets (the daemon's socket and datasets folder, in tmp), the
# programs ($feederd, $feederctl, $packer, $genimg, $genspeech, $client),
# threads (given to the generators and packer: 1), bg_pids (background
# processes killed at exit), daemon_pid, daemon_log, daemon_why.
set -u
src=${FEEDER_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${FEEDER_BUILD:-$src/build}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")
here=$(cd "$(dirname "${BASH_SOURCE[1]:-$0}")" && pwd)
feederd=$build/daemon/feederd
feederctl=$build/tools/feederctl
packer=$build/packer/packer
genimg=$build/tools/gen/gen-images
genspeech=$build/tools/gen/gen-speech
client=$build/tests/e2e/e2e_client
. "$src/tests/lib/find_python.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/feeder-test.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
sock=$tmp/feederd.sock
datasets=$tmp/datasets
mkdir "$datasets"
threads=1
bg_pids=()
exit_hooks=()
daemon_pid=
daemon_log=$tmp/feederd.log
daemon_why=
# A command line put before feederd (valgrind, timeout,
# systemd-socket-activate), and how long start_daemon waits for an answer.
daemon_wrap=()
daemon_wait=10
py=$(find_python) || py=python3

# at_exit COMMAND: run COMMAND (a string, eval'ed) at exit, after the
# background processes and the daemon are gone, before tmp is removed.
at_exit() { exit_hooks+=("$1"); }

# (Every step may fail: a benchmark runs under set -e, and the status it
# exits with must stay its own.)
lib_cleanup() {
	local p h
	for p in "${bg_pids[@]}" $daemon_pid; do
		kill -9 "$p" 2>/dev/null || :
		wait "$p" 2>/dev/null || :
	done
	for h in "${exit_hooks[@]}"; do eval "$h" || :; done
	rm -rf "$tmp" || :
}
trap lib_cleanup EXIT
# A script stopped by a signal (meson's timeout, ^C) still cleans up.
trap 'exit 143' TERM
trap 'exit 130' INT

# fail MESSAGE: exit 1 with one line, then the daemon's log tail if any.
fail() {
	echo "FAIL: $*" >&2
	if [ -s "$daemon_log" ]; then
		echo "--- $daemon_log (last 30 lines) ---" >&2
		tail -n 30 "$daemon_log" >&2
	fi
	exit 1
}
skip() { echo "SKIP: $*" >&2; exit 77; }
# need_exe PATH...: skip unless each is built.
need_exe() {
	local x
	for x; do [ -x "$x" ] || skip "$x is not built"; done
}
# need_python MODULE...: $py becomes a Python that imports them, else skip.
need_python() { py=$(find_python "$@") || skip "$py"; }
# need_audio: skip unless packer packs audio (the audio libraries).
need_audio() {
	"$packer" pack audio --help >/dev/null 2>&1 || skip "packer was built without audio support"
}

# wait_until SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds
# (0) or SECONDS have passed (1).
wait_until() {
	local i n=$(($1 * 20))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# spawn LOG COMMAND...: COMMAND in the background, its output in LOG, its pid
# in $spawned and in bg_pids (killed at exit).
spawn() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	spawned=$!
	bg_pids+=("$spawned")
}

# start_daemon [FLAGS...]: feederd (behind daemon_wrap) on $sock serving
# $datasets, 2 workers, debug log appended to $daemon_log; FLAGS come last
# and win. Returns 0 once it answers feederctl status (daemon_pid set), else
# 1 with daemon_why saying why in one line (its log's last line). Another
# daemon: set sock, datasets and daemon_log for the call.
start_daemon() {
	local i
	need_exe "$feederd"
	"${daemon_wrap[@]}" "$feederd" --config /dev/null --socket "$sock" --datasets "$datasets" \
		--workers 2 --log-level debug "$@" >>"$daemon_log" 2>&1 &
	daemon_pid=$!
	for ((i = 0; i < daemon_wait * 20; i++)); do
		if daemon_answers; then
			daemon_why=
			return 0
		fi
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$daemon_pid" 2>/dev/null; then
		kill -9 "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
		daemon_why="feederd did not answer on $sock within $daemon_wait s"
	else
		wait "$daemon_pid"
		daemon_why="feederd exited $? at start"
	fi
	daemon_why+=": $(tail -n 1 "$daemon_log" 2>/dev/null)"
	daemon_pid=
	return 1
}
daemon_answers() {
	if [ -x "$feederctl" ]; then
		"$feederctl" --socket "$sock" --timeout 1000 status >/dev/null 2>&1
	else
		[ -S "$sock" ]
	fi
}

# stop_daemon [SECONDS]: SIGTERM; feederd must exit 0 within SECONDS (2).
# Returns its exit status (124 when it had to be killed), daemon_why saying
# what went wrong.
stop_daemon() {
	local rc limit=${1:-2}
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid" 2>/dev/null
	if ! wait_until "$limit" exited "$daemon_pid"; then
		kill_daemon
		daemon_why="feederd still running $limit s after SIGTERM"
		return 124
	fi
	wait "$daemon_pid"
	rc=$?
	daemon_pid=
	daemon_why="feederd exited $rc after SIGTERM"
	return $rc
}

# kill_daemon: SIGKILL, reaped.
kill_daemon() {
	[ -n "$daemon_pid" ] || return 0
	kill -9 "$daemon_pid" 2>/dev/null
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
	return 0
}

# daemon_alive: feederd still runs and answers status (in $tmp/status.json).
daemon_alive() {
	kill -0 "$daemon_pid" 2>/dev/null || fail "feederd died"
	"$feederctl" --socket "$sock" --timeout 5000 status --json >"$tmp/status.json" \
		|| fail "feederctl status does not answer"
}

# wait_served NAME SAMPLES: until feederctl lists dataset NAME with SAMPLES
# samples (10 s).
wait_served() {
	wait_until 10 served_with "$1" "$2" || fail "$1 is not served with $2 samples: $(cat "$tmp/ds.json")"
}
served_with() {
	"$feederctl" --socket "$sock" datasets --json >"$tmp/ds.json" 2>/dev/null &&
		"$py" -c 'import json, sys
d = {e["name"]: e["samples"] for e in json.load(open(sys.argv[1]))["datasets"]}
sys.exit(0 if d.get(sys.argv[2]) == int(sys.argv[3]) else 1)' "$tmp/ds.json" "$1" "$2"
}

# gen_images DIR N CLASSES SEED: N photo-like JPEGs in ImageFolder layout.
gen_images() {
	need_exe "$genimg"
	"$genimg" "$2" "$1" --classes "$3" --seed "$4" --threads "$threads" >/dev/null \
		|| fail "gen-images $2 $1"
}

# pack_images NAME DIR [--unique] [OPTIONS...]: packer pack images OPTIONS
# DIR into $datasets/NAME; --unique packs from a list whose label is the
# sample's number (the samples are then told apart by their labels).
pack_images() {
	local name=$1 dir=$2 list=()
	shift 2
	need_exe "$packer"
	if [ "${1:-}" = --unique ]; then
		shift
		(cd "$dir" && find . -name '*.jpg' | sort | awk '{ printf "%s\t%d\n", substr($0, 3), NR - 1 }') \
			>"$tmp/list-$name.tsv"
		list=(--list "$tmp/list-$name.tsv")
	fi
	"$packer" pack images --threads "$threads" "${list[@]}" "$@" "$dir" "$datasets/$name" \
		>/dev/null 2>"$tmp/packer-$name.log" \
		|| fail "packer pack images for $name: $(tail -n 3 "$tmp/packer-$name.log")"
}

# make_images NAME N CLASSES SEED [OPTIONS...]: gen_images into $tmp/src-NAME
# and pack_images with OPTIONS, by default --resize-shorter 64 (decoding
# stays cheap on a shared machine).
make_images() {
	local name=$1
	gen_images "$tmp/src-$name" "$2" "$3" "$4"
	shift 4
	[ $# -gt 0 ] || set -- --resize-shorter 64
	pack_images "$name" "$tmp/src-$name" "$@"
}

# pack_audio NAME DIR [OPTIONS...]: packer pack audio OPTIONS DIR into
# $datasets/NAME.
pack_audio() {
	local name=$1 dir=$2
	shift 2
	need_exe "$packer"
	need_audio
	"$packer" pack audio --threads "$threads" "$@" "$dir" "$datasets/$name" \
		>/dev/null 2>"$tmp/packer-$name.log" \
		|| fail "packer pack audio for $name: $(tail -n 3 "$tmp/packer-$name.log")"
}

# make_speech NAME SPEAKERS UTTERANCES SEED [OPTIONS...]: gen-speech into
# $tmp/src-NAME and pack_audio with OPTIONS (--features mfcc ...).
make_speech() {
	local name=$1
	need_exe "$genspeech"
	"$genspeech" "$2" "$3" "$tmp/src-$name" --seed "$4" --threads "$threads" >/dev/null \
		|| fail "gen-speech for $name"
	shift 4
	pack_audio "$name" "$tmp/src-$name" "$@"
}

# expect_rc WANT COMMAND...: run COMMAND (stdout in $tmp/out, stderr in
# $tmp/err); its exit status must be WANT.
expect_rc() {
	local want=$1 rc
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = "$want" ] || { cat "$tmp/err" >&2; fail "'$*' exited $rc, expected $want"; }
}

# json_get FILE KEY: a top-level number or string of a JSON object.
json_get() { "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# The e2e_client (tests/e2e/e2e_client.c) against this daemon: run_client
# COMMAND DATASET [ARG...] in the foreground; spawn_client LOG COMMAND
# DATASET [ARG...] in the background ($spawned is the client itself).
client_args=(--socket "$sock" --datasets "$datasets")
run_client() { "$client" "${client_args[@]}" "$@"; }
spawn_client() { spawn "$1" "$client" "${client_args[@]}" "${@:2}"; }

# wait_for FILE PATTERN PID: until FILE holds PATTERN (10 s), while PID lives.
wait_for() { wait_until 10 logged "$@" || fail "no '$2' from pid $3: $(cat "$1")"; }
logged() {
	local alive=1
	kill -0 "$3" 2>/dev/null || alive=0
	grep -q "$2" "$1" 2>/dev/null && return 0
	[ $alive = 1 ] || fail "no '$2' from pid $3, which has exited: $(cat "$1")"
	return 1
}

# exited PID: PID no longer runs.
exited() { ! kill -0 "$1" 2>/dev/null; }

# wait_client PID LOG SECONDS: the client must exit 0 within SECONDS.
wait_client() {
	wait_until "$3" exited "$1" || fail "client still running after $3 s: $(cat "$2")"
	wait "$1" || fail "client failed: $(cat "$2")"
}

# survive_field LOG KEY: a field of e2e_client survive's "survive: k=v ...
# message=TEXT" line (message is the rest of the line).
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

# samples_checked LOG...: the samples `e2e_client epoch` checked, summed.
samples_checked() {
	awk '{ for (i = 1; i < NF - 1; i++) if ($(i + 1) == "samples" && $(i + 2) == "checked") s += $i }
	     END { print s + 0 }' "$@"
}

# start_metrics_daemon [FLAGS...]: start_daemon serving /metrics on a free
# loopback port, $port; skips where feederd was built without libmicrohttpd.
start_metrics_daemon() {
	if ! start_daemon --metrics-listen 127.0.0.1:0 "$@"; then
		grep -q "without libmicrohttpd" "$daemon_log" && skip "feederd was built without libmicrohttpd"
		fail "$daemon_why"
	fi
	metrics_port
}
# metrics_port: $port from the log of a feederd with --metrics-listen 127.0.0.1:0.
metrics_port() {
	port=$(sed -n 's/.*serving \/metrics on 127.0.0.1:\([0-9]*\).*/\1/p' "$daemon_log" | head -1)
	[ -n "$port" ] || fail "no 'serving /metrics' line in the log"
}

# sanitized [asan|tsan]: feederd is built with AddressSanitizer (or the
# sanitizer named).
sanitized() { ldd "$feederd" 2>/dev/null | grep -q "lib${1:-asan}"; }
