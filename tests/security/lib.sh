# lib.sh — sourced by the scripts in tests/security: tests/e2e/lib.sh (a real
# feederd on a temporary socket, cleaned up on exit) plus a dataset whose
# labels are unique per sample and the path of limits_client.
source "${FEEDER_SOURCE:?FEEDER_SOURCE must name the source directory}/tests/e2e/lib.sh"
limits=$build/tests/security/limits_client
[ -x "$limits" ] || skip "$limits is not built"

# make_unique_dataset NAME N: N generated photos, label = sample number,
# pre-resized to a shorter side of 48 pixels.
make_unique_dataset() {
	"$genimg" "$2" "$tmp/src-$1" --classes 3 --seed 5 --threads 1 >/dev/null || fail "gen-images for $1"
	(cd "$tmp/src-$1" && find . -name '*.jpg' | sort | awk '{ printf "%s\t%d\n", $0, NR - 1 }') \
		>"$tmp/list-$1.txt"
	"$packer" pack images --list "$tmp/list-$1.txt" --resize-shorter 48 --threads 1 \
		"$tmp/src-$1" "$datasets/$1" >/dev/null 2>"$tmp/packer-$1.log" \
		|| fail "packer for $1: $(cat "$tmp/packer-$1.log")"
}

# Under AddressSanitizer freed memory sits in a quarantine, so the daemon's
# resident memory says nothing about leaks there (LeakSanitizer does).
asan=0
if ldd "$feederd" 2>/dev/null | grep -q libasan; then asan=1; export LIMITS_NO_RSS=1; fi

# daemon_alive: feederd still runs and answers.
daemon_alive() {
	kill -0 "$daemon_pid" 2>/dev/null || fail "feederd died"
	"$feederctl" --socket "$sock" --timeout 2000 status >/dev/null || fail "feederd does not answer"
}
