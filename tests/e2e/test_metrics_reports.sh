#!/usr/bin/env bash
# test_metrics_reports.sh — what a client reports of its data wait cannot
# inflate feederd's counters: three clients speaking the protocol themselves
# report, with every RELEASE, totals of 2^63 us of wait, of 2^64 - 1 us of
# wait and of compute, and 100 s of wait with 300 s of compute (what a
# client that reopened its stream after a reconnect carries over). Each
# stream's totals (feederctl streams --json) stay within the time it has
# been open, the last one keeping its wait share (0.25); and
# feeder_trainer_wait_seconds_total, their sum per dataset, stays within
# the three streams' wall time, while they run and after they end (when
# their totals move into the dataset's), instead of wrapping around 2^64.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
make_images small 24 2 5
start_metrics_daemon

t0=$(date +%s.%N)
reports=("9223372036854775808 0" "18446744073709551615 18446744073709551615" "100000000 300000000")
for i in 0 1 2; do
	# shellcheck disable=SC2086 # two numbers
	spawn_client "$tmp/client$i.out" report small ${reports[i]} 20 2500
done
for i in 0 1 2; do wait_for "$tmp/client$i.out" ready "${bg_pids[$i]}"; done
"$feederctl" --socket "$sock" streams --json >"$tmp/streams.json" || fail "feederctl streams"
scrape() {
	"$py" - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(30):  # the text is rewritten once a tick
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5) as r:
        found = [line.split()[-1] for line in r.read().decode().splitlines()
                 if line.startswith('feeder_trainer_wait_seconds_total{dataset="small"')]
    if found and float(found[0]) > 0:
        break
    time.sleep(0.1)
print(found[0] if found else "nothing")
PY
}
during=$(scrape) || fail "scrape"
for p in "${bg_pids[@]}"; do wait "$p" || fail "a report client failed: $(cat "$tmp"/client*.out)"; done
bg_pids=()
sleep 1.5 # a tick or so: the ended streams' totals are the dataset's now
after=$(scrape) || fail "scrape"
"$py" - "$tmp/streams.json" "$t0" "$during" "$after" <<'PY' || fail "the reports were counted as sent"
import json, sys, time
streams = json.load(open(sys.argv[1]))["streams"]
elapsed, during, after = time.time() - float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
assert len(streams) == 3, streams
for s in streams:
    total = (s["trainer_wait_us"] + s["trainer_compute_us"]) / 1e6
    assert s["trainer_reports"] and 0 <= total <= elapsed, (total, elapsed, s)
shares = sorted(round(s["wait_share_total"], 2) for s in streams)
assert 0.25 in shares, shares
print(f"streams' totals {[s['trainer_wait_us'] / 1e6 for s in streams]} s of wait within "
      f"{elapsed:.1f} s; shares {shares}; feeder_trainer_wait_seconds_total {during} s while "
      f"they ran, {after} s after they ended")
assert 0 < during <= 3 * elapsed and during <= after <= 3 * elapsed, (during, after, elapsed)
PY
stop_daemon || fail "$daemon_why"
echo "PASS"
