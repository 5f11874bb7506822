#!/bin/bash
# soak.sh MINUTES — the soak test: 8 concurrent streams against one
# feederd for MINUTES (default 2, fractions allowed), their client processes
# killed with SIGKILL at random moments and restarted. Each client
# (tests/soak/soak_client, built from tests/fault/restart_client.c) records
# one line per batch it read and resumes after its last complete line, so at
# the end every stream's record must hold each sample of each finished epoch
# exactly once (labels are unique per sample), with the content hash that a
# fault-free reference stream gives.
# Afterwards the daemon's anonymous memory, open descriptors and memfds must
# be back to what they were after a warm-up round (within 1 MiB and 0 fds;
# the memory is reported but not judged under AddressSanitizer, whose
# quarantine keeps freed memory — LeakSanitizer judges leaks there).
#
# Then, for MINUTES again, the daemon itself restarts every few seconds,
# alternately stopped the way systemd does it (SIGTERM, wait for the exit,
# a new feederd on the same socket: `systemctl restart`) and killed with
# SIGKILL, while its clients, now reconnecting (soak_client --reconnect),
# are still killed at random: the records must still hold every sample once,
# with the reference's bytes, and no batch blanked to zeros.
#
# Hostile neighbours run meanwhile in the first part (tests/soak/hostile_client):
# one keeps up to 40 connections that never say HELLO, one asks for STATUS
# without ever reading a reply, one opens streams, closes them and keeps
# their memfds. The checked streams must still lose nothing, the daemon's
# memory (RssAnon + RssShmem, sampled every half second) must stay within
# memory_limit (128 MiB) plus 32 MiB, and the kept memfds must hold nothing.
#
# Prints one summary line ("soak: M minutes, ..."). Runs under meson (suite
# 'soak') with FEEDER_BUILD/FEEDER_SOURCE set, or by hand from a build
# directory: FEEDER_BUILD=build FEEDER_SOURCE=. tests/soak.sh 0.5
minutes=${1:-2}
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
soak_client=$build/tests/soak/soak_client
hostile=$build/tests/soak/hostile_client
need_exe "$soak_client" "$hostile"
seconds=$("$py" -c "import sys; print(max(1, round(float(sys.argv[1]) * 60)))" "$minutes") \
	|| fail "MINUTES must be a number, not '$minutes'"
asan=0
sanitized && asan=1

# A dataset whose label is the sample number, so that a record's labels name
# the samples it holds.
N=60
make_images uniq $N 4 11 --unique --resize-shorter 48

# ASan's quarantine keeps up to 256 MiB of freed heap resident by default;
# the memory bound below is about what the daemon keeps, so under ASan the
# quarantine is cut to 8 MiB (its shadow and allocator caches still count).
[ $asan = 1 ] && export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8
daemon_flags=(--log-level info --memory-limit 128M --hello-timeout 2 --max-queued 64K --shutdown-drain 5)
start_daemon "${daemon_flags[@]}" || fail "$daemon_why"

# Stream k: train or eval, u8 (NHWC)/f16/f32, its own seed and batch size;
# no reconnecting unless asked for.
streams=8
stream_args() {
	local k=$1 mode=(--eval "") dtypes=(u8 f16 f32) layouts=(nhwc nchw nchw) batches=(8 5 7 6)
	echo --socket "$sock" --dataset uniq --samples $N --seed $((100 + k)) ${mode[$((k % 2))]} \
		--dtype "${dtypes[$((k % 3))]}" --layout "${layouts[$((k % 3))]}" \
		--batch "${batches[$((k % 4))]}" --size 24 --epochs 1000 --reconnect 0
}

# The daemon's figures: anonymous memory (KiB), descriptors, memfds.
figures() {
	local f fds=0 memfds=0
	for f in /proc/"$daemon_pid"/fd/*; do
		fds=$((fds + 1))
		case "$(readlink "$f" 2>/dev/null)" in /memfd:*) memfds=$((memfds + 1)) ;; esac
	done
	echo "$(awk '/^RssAnon:/ { print $2 }' "/proc/$daemon_pid/status") $fds $memfds"
}
# Wait until the daemon holds no streams and only feederctl's connection.
idle() {
	st=$("$feederctl" --socket "$sock" --timeout 2000 status --json 2>/dev/null) &&
		"$py" -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if s["clients"] == 1 and s["streams"] == 0 and s["memory_used"] == 0 else 1)' "$st" 2>/dev/null
}
wait_idle() {
	wait_until 10 idle || fail "the daemon still holds clients or streams: $st"
	sleep 0.3 # zombies whose last worker task is still finishing
}

# Warm-up: every stream runs two epochs at once, then the start figures.
pids=()
for k in $(seq 0 $((streams - 1))); do
	"$soak_client" $(stream_args $k) --out "$tmp/warm-$k" --max-batches 20 >/dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "warm-up client failed"; done
wait_idle
read -r rss0 fd0 memfd0 <<<"$(figures)"

# The soak: clients throttled to a few batches a second each, killed and
# restarted at random.
client_pid=()
reconnect=()
start_client() {
	local k=$1
	"$soak_client" $(stream_args $k) --out "$tmp/rec-$k" --resume --delay-ms 40 \
		"${reconnect[@]}" >>"$tmp/client-$k.log" 2>&1 &
	client_pid[$k]=$!
	bg_pids+=($!)
}
# a client that is killed or exits with its stream done, and started again
cycle_client() {
	local k=$1
	if kill -0 "${client_pid[$k]}" 2>/dev/null; then
		kill -9 "${client_pid[$k]}" 2>/dev/null
		wait "${client_pid[$k]}" 2>/dev/null
	else
		wait "${client_pid[$k]}"; rc=$?
		[ $rc -eq 0 ] || fail "client $k exited $rc: $(tail -n 3 "$tmp/client-$k.log")"
	fi
	start_client $k
	restarts=$((restarts + 1))
}
for k in $(seq 0 $((streams - 1))); do start_client $k; done
hostile_pids=()
for mode in idle noread keepfd; do
	spawn "$tmp/hostile-$mode.out" "$hostile" "$sock" uniq $mode "$seconds"
	hostile_pids+=("$spawned")
done
mem_max=0
mem_now() { awk '/^RssAnon:/ {a = $2} /^RssShmem:/ {s = $2} END {print a + s}' "/proc/$daemon_pid/status"; }
# stop_clients: every checked client killed (each resumes from its record).
stop_clients() {
	kill -9 "${client_pid[@]}" 2>/dev/null
	wait "${client_pid[@]}" 2>/dev/null
}
restarts=0
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ]; do
	sleep "0.$((RANDOM % 6 + 1))"
	kill -0 "$daemon_pid" 2>/dev/null || fail "feederd died during the soak"
	m=$(mem_now); [ "$m" -gt "$mem_max" ] && mem_max=$m
	cycle_client $((RANDOM % streams))
done
stop_clients
for p in "${hostile_pids[@]}"; do
	wait "$p" || fail "a hostile neighbour found the daemon wanting: $(cat "$tmp"/hostile-*.out)"
done
bg_pids=()
cat "$tmp"/hostile-*.out
echo "daemon memory (RssAnon + RssShmem) at most $((mem_max / 1024)) MiB during the soak"
[ "$mem_max" -le $(((128 + 32) * 1024)) ] \
	|| fail "the daemon's memory reached $((mem_max / 1024)) MiB, over memory_limit 128 MiB + 32 MiB"
wait_idle
read -r rss1 fd1 memfd1 <<<"$(figures)"

# The daemon restarts.
reconnect=(--reconnect 30000)
for k in $(seq 0 $((streams - 1))); do start_client $k; done
terms=0 kills=0
end=$((SECONDS + seconds))
next_stop=$((SECONDS + 2))
while [ $SECONDS -lt $end ]; do
	sleep "0.$((RANDOM % 6 + 1))"
	if [ $SECONDS -ge $next_stop ]; then
		if [ $(((terms + kills) % 2)) -eq 0 ]; then
			stop_daemon 10 || fail "$daemon_why"
			terms=$((terms + 1))
		else
			kill_daemon
			kills=$((kills + 1))
		fi
		sleep "0.$((RANDOM % 4 + 1))"
		start_daemon "${daemon_flags[@]}" || fail "$daemon_why"
		next_stop=$((SECONDS + 2 + RANDOM % 4))
	else
		cycle_client $((RANDOM % streams))
	fi
done
stop_clients
bg_pids=()
echo "daemon restarts: $terms by SIGTERM, $kills by SIGKILL"
wait_idle

# References: the same streams from fresh clients that nobody kills, as many
# epochs as the soak reached.
for k in $(seq 0 $((streams - 1))); do
	[ -s "$tmp/rec-$k" ] || fail "stream $k recorded nothing"
	last=$(tail -n 1 "$tmp/rec-$k" | awk '{ print $1 }')
	"$soak_client" $(stream_args $k) --out "$tmp/ref-$k" --epochs $((last + 1)) >/dev/null \
		|| fail "reference stream $k"
done
stop_daemon || fail "$daemon_why"

"$py" - "$tmp" "$minutes" $streams $N $restarts $((rss1 - rss0)) $((fd1 - fd0)) \
	$((memfd1 - memfd0)) $asan $terms $kills <<'PY' || fail "the soak records do not check out"
import sys
tmp, minutes = sys.argv[1:3]
streams, n, restarts, rss_kib, fd_drift, memfd_drift, asan, terms, kills = map(int, sys.argv[3:])

def load(path):
    """Complete lines only: a client killed mid-write leaves a partial one."""
    return [(int(f[0]), int(f[1]), [tuple(x.split(":")) for x in f[2:]])
            for f in (line.split() for line in open(path) if line.endswith("\n"))]

checked = lost = dup = mismatched = zero = 0
problems = []
for k in range(streams):
    rec, ref = load(f"{tmp}/rec-{k}"), load(f"{tmp}/ref-{k}")
    want = {(e, b): s for e, b, s in ref}
    per_epoch = max(b for e, b, s in ref) + 1
    seen = {}
    expect = (0, 0)
    for e, b, s in rec:
        if (e, b) != expect:
            problems.append(f"stream {k}: epoch {e} batch {b} follows a record that wants epoch {expect[0]} batch {expect[1]} next")
        expect = (e, b + 1) if b + 1 < per_epoch else (e + 1, 0)
        if len(s) > 1 and all(label == "0" for label, _ in s):
            zero += 1  # labels are unique: a batch of label 0 only is a blanked one
            problems.append(f"stream {k} epoch {e} batch {b} is all zeros")
        if want.get((e, b)) != s:
            mismatched += 1
            problems.append(f"stream {k} epoch {e} batch {b} differs from the reference")
        for label, _ in s:
            seen.setdefault(e, []).append(int(label))
        checked += len(s)
    last = max(seen)
    for e in range(last + 1):
        labels = seen.get(e, [])  # none: an epoch missing altogether
        d = len(labels) - len(set(labels))
        dup += d
        if e < last:  # a finished epoch holds every sample
            missing = n - len(set(labels) & set(range(n)))
            lost += missing
            if missing or d:
                problems.append(f"stream {k} epoch {e}: {missing} samples lost, {d} duplicated")
for p in problems[:10]:
    print("  " + p)
print(f"soak: {minutes} minutes, {streams} streams, {restarts} restarts, "
      f"{terms + kills} daemon restarts ({terms} SIGTERM, {kills} SIGKILL), {checked} samples checked, "
      f"{lost} lost, {dup} duplicated, {zero} zero batches, {mismatched} batches differing from the reference, "
      f"RSS drift {rss_kib} KiB{' (ASan: not judged)' if asan else ''}, fd drift {fd_drift}, memfd drift {memfd_drift}")
ok = not problems and lost == 0 and dup == 0 and zero == 0 and terms > 0 and kills > 0 and (asan or abs(rss_kib) <= 1024) and fd_drift == 0 and memfd_drift == 0
sys.exit(0 if ok else 1)
PY
echo "daemon RssAnon $rss0 -> $rss1 KiB, fds $fd0 -> $fd1, memfds $memfd0 -> $memfd1"
exit 0
