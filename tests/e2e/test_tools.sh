#!/bin/bash
# test_tools.sh — feederctl status/datasets/streams (table and --json) and
# feeder-bench --json against a real feederd: the JSON parses, names the
# dataset with its sample count, shows a live stream with its figures and
# its pipeline's settings (also in feederd's "stream opened" line), and
# feeder-bench reports the fields the issue asks for with plausible values.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
bench=$build/tools/feeder-bench
need_exe "$bench"
make_images imgs 16 2 7
start_daemon || fail "$daemon_why"
"$feederctl" --socket "$sock" status > "$tmp/status.txt" || fail "feederctl status"
grep -q 'workers *2' "$tmp/status.txt" || fail "status table: $(cat "$tmp/status.txt")"
"$feederctl" --socket "$sock" datasets --json > "$tmp/ds.json" || fail "feederctl datasets"
"$feederctl" --socket "$sock" datasets | grep -q '^imgs *jpeg *16 ' || fail "datasets table"

spawn_client "$tmp/hold.log" hold imgs
wait_for "$tmp/hold.log" HOLDING "$spawned"
"$feederctl" --socket "$sock" streams --json > "$tmp/streams.json" || fail "feederctl streams"
"$feederctl" --socket "$sock" streams > "$tmp/streams.txt" || fail "feederctl streams"
grep -q ' imgs ' "$tmp/streams.txt" || fail "streams table: $(cat "$tmp/streams.txt")"
# The settings on the line under the stream's row.
settings="jpeg 64x64 train, scale 0.08..1 ratio 0.75..1.33, flip p=0.5, f32 NCHW"
grep -A1 ' imgs ' "$tmp/streams.txt" | grep -qx " *$settings" \
	|| fail "streams table lacks the settings line: $(cat "$tmp/streams.txt")"
grep -q "stream [0-9]* opened: 'imgs' .*; jpeg 64x64 train, scale" "$tmp/feederd.log" \
	|| fail "the daemon's log does not name the stream's settings"
kill -9 "${bg_pids[0]}"; wait "${bg_pids[0]}" 2>/dev/null; bg_pids=()

"$bench" --socket "$sock" --datasets "$datasets" --dataset imgs --batch 4 --size 32 \
	--dtype f16 --batches 6 --streams 2 --json > "$tmp/bench.json" 2>"$tmp/bench.err" \
	|| fail "feeder-bench: $(cat "$tmp/bench.err")"
cat "$tmp/ds.json" "$tmp/streams.json" "$tmp/bench.json"
"$py" - "$tmp" "$settings" <<'PY' || fail "the JSON of feederctl datasets, streams or feeder-bench"
import json, sys
d = json.load(open(f"{sys.argv[1]}/ds.json"))["datasets"]
assert [x["name"] for x in d] == ["imgs"], d
assert d[0]["samples"] == 16 and d[0]["classes"] == 2 and d[0]["kind"] == "jpeg", d
s = json.load(open(f"{sys.argv[1]}/streams.json"))["streams"]
assert len(s) == 1, s
s = s[0]
assert s["dataset"] == "imgs" and s["pipeline"] == "jpeg" and s["batch"] == 4 and s["slots"] == 3, s
assert s["batches_sent"] >= 3 and s["samples"] >= 12, s
for k in ("samples_per_s", "replacements", "client_wait_us", "pid", "uid"):
    assert k in s, k
assert s["settings"] == sys.argv[2], s["settings"]
b = json.load(open(f"{sys.argv[1]}/bench.json"))
for k in ("images_per_s", "mb_per_s", "wait_mean_us", "wait_p99_us", "ceiling_images_per_s"):
    assert isinstance(b[k], (int, float)), k
assert b["batches"] == 12 and b["images"] == 48, b
assert b["images_per_s"] > 0 and b["mb_per_s"] > 0 and b["ceiling_images_per_s"] > 0, b
assert b["wait_p99_us"] >= b["wait_mean_us"] * 0.999 or b["batches"] < 100, b
# images/s counts after each stream's first batch; start-up is apart
assert 0 < b["startup_s"] < b["seconds"], b
# (40 images after the two first batches, in at most seconds - startup_s)
assert b["images_per_s"] * (b["seconds"] - b["startup_s"]) >= 40 * 0.999, b
assert b["workers"] == 2, b
# f16 32x32: 3*32*32*2 bytes per image
assert b["bytes"] == 48 * 3 * 32 * 32 * 2, b
PY
"$feederctl" --socket /nonexistent/feederd.sock status 2>"$tmp/err.txt" && fail "feederctl reached a missing socket"
grep -q 'cannot connect' "$tmp/err.txt" || fail "feederctl error: $(cat "$tmp/err.txt")"
stop_daemon || fail "$daemon_why"
echo "ok: feederctl and feeder-bench"
