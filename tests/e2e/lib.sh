# lib.sh — sourced by the end-to-end test scripts in this folder: build small
# datasets with gen-images and packer, write a config, start a real feederd on
# a temporary socket, wait until it serves, and stop it (and everything else
# the test started) on exit. Exit status convention: 0 pass, 1 fail, 77 skip.
set -u
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
src=${FEEDER_SOURCE:?FEEDER_SOURCE must name the source directory}
feederd=$build/daemon/feederd
feederctl=$build/tools/feederctl
packer=$build/packer/packer
genimg=$build/tools/gen/gen-images
client=$build/tests/e2e/e2e_client

skip() { echo "SKIP: $*"; exit 77; }
fail() {
	echo "FAIL: $*"
	if [ -n "${tmp:-}" ] && [ -s "$tmp/feederd.log" ]; then
		echo "--- feederd log (last 30 lines) ---"; tail -n 30 "$tmp/feederd.log"
	fi
	exit 1
}

for exe in "$feederd" "$feederctl" "$packer" "$genimg" "$client"; do
	[ -x "$exe" ] || skip "$exe is not built"
done

tmp=$(mktemp -d)
sock=$tmp/feederd.sock
datasets=$tmp/datasets
mkdir -p "$datasets"
daemon_pid=
bg_pids=()

cleanup() {
	for p in "${bg_pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	if [ -n "$daemon_pid" ]; then kill -9 "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# make_dataset NAME N CLASSES SEED: N generated photos, pre-resized to a
# shorter side of 64 pixels so that decoding stays cheap on a shared machine.
make_dataset() {
	"$genimg" "$2" "$tmp/src-$1" --classes "$3" --seed "$4" --threads 1 >/dev/null \
		|| fail "gen-images for $1"
	"$packer" pack images --resize-shorter 64 --threads 1 "$tmp/src-$1" "$datasets/$1" \
		>/dev/null 2>"$tmp/packer-$1.log" || fail "packer for $1: $(cat "$tmp/packer-$1.log")"
}

# start_daemon [FLAGS...]: feederd from a config file in $tmp, logging to
# $tmp/feederd.log; returns once it answers feederctl status.
start_daemon() {
	cat > "$tmp/feederd.conf" <<CONF
[feederd]
socket = $sock
datasets = $datasets
workers = 2
log_level = debug
CONF
	"$feederd" --config "$tmp/feederd.conf" "$@" >>"$tmp/feederd.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 200); do
		if "$feederctl" --socket "$sock" --timeout 1000 status >/dev/null 2>&1; then return 0; fi
		kill -0 "$daemon_pid" 2>/dev/null || fail "feederd exited at start"
		sleep 0.05
	done
	fail "feederd did not start serving within 10 s"
}

# stop_daemon: SIGTERM; feederd must exit 0 within 2 s.
stop_daemon() {
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid"
	for _ in $(seq 40); do
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$daemon_pid" 2>/dev/null && fail "feederd still running 2 s after SIGTERM"
	wait "$daemon_pid"; local rc=$?
	daemon_pid=
	[ $rc -eq 0 ] || fail "feederd exited $rc after SIGTERM"
}

# run_client COMMAND DATASET [ARG]: e2e_client against this daemon. Background
# clients that a test kills must be started as `"$client" "${client_args[@]}" ... &`
# instead, so that $! is the client itself and not a subshell running it.
client_args=(--socket "$sock" --datasets "$datasets")
run_client() { "$client" "${client_args[@]}" "$@"; }

# json_get FILE KEY: a top-level number or string of a JSON object.
json_get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
