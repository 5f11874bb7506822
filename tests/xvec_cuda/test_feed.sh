#!/usr/bin/env bash
# test_feed.sh — the GPU trainer fed by a real feederd through xvec_feed.
#
# Packs a few generated speakers, starts feederd on a temporary socket and
# trains a small x-vector TDNN on the GPU for 30 steps with xvec_feed_bench
# (the overlapped copy loop: xvec_feed_next -> xvec_cuda_train_step ->
# xvec_feed_prefetch). Passes when every step ran, the loss is finite and
# the reported GPU wait fraction is a fraction. Skips (77) first thing when
# there is no CUDA device, before building any data.
set -u
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
bench=$build/tests/xvec_cuda
if ! why=$("$bench/xvec_gpu_bench" --probe 2>&1); then
	echo "SKIP: ${why#xvec_gpu_bench: }"
	exit 77
fi
for exe in "$build/daemon/feederd" "$build/tools/packer" "$build/tools/gen-speech"; do
	[ -x "$exe" ] || { echo "SKIP: $exe is not built"; exit 77; }
done
tmp=$(mktemp -d)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -s "$tmp/feederd.log" ] && tail -n 20 "$tmp/feederd.log"; exit 1; }

"$build/tools/gen-speech" 6 5 "$tmp/speech" --seed 3 --threads 1 >/dev/null 2>&1 || fail "gen-speech"
"$build/tools/packer" pack audio "$tmp/speech" "$tmp/datasets/speech" --features mfcc --ceps 30 \
	>/dev/null 2>"$tmp/pack.log" || fail "packer: $(cat "$tmp/pack.log")"
"$build/daemon/feederd" --config /dev/null --socket "$tmp/s.sock" --datasets "$tmp/datasets" \
	--log-level warning 2>"$tmp/feederd.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$tmp/s.sock" ] && break; sleep 0.05; done
[ -S "$tmp/s.sock" ] || fail "feederd did not start"

out=$("$bench/xvec_feed_bench" --dataset speech --socket "$tmp/s.sock" --batch 8 --chunk 40 \
	--steps 30 --log 10 --width 32 --pool 48 --embed 16 --eps 0.1 2>"$tmp/bench.log" | tail -n 1) \
	|| fail "xvec_feed_bench: $(tail -n 5 "$tmp/bench.log")"
echo "$out"
/usr/bin/python3 - "$out" <<'PY' || fail "bad result: $out"
import json, math, sys
r = json.loads(sys.argv[1])
assert r["steps"] == 30, r
assert math.isfinite(r["loss"]) and r["loss"] > 0, r
assert 0.0 <= r["gpu_wait_fraction"] <= 1.0 and r["gpu_span_ms"] > 0, r
PY
exit 0
