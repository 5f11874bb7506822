#!/usr/bin/env bash
# test_feed.sh — the GPU trainer fed by a real feederd through xvec_feed.
#
# Packs a few generated speakers, starts feederd on a temporary socket and
# trains a small x-vector TDNN on the GPU for 30 steps with xvec_feed_bench
# (the overlapped copy loop: xvec_feed_next -> xvec_cuda_train_step ->
# xvec_feed_prefetch). Passes when every step ran, the loss is finite and
# the reported GPU wait fraction is a fraction. Then it checks the content
# the trainer receives, batch by batch as copied back from the device,
# against the same stream read on the host:
#   host ring (feederd without --gpu): byte for byte, with the ring pinned
#   and, as where CUDA refuses to register it (FEEDER_TEST_NO_PIN=1), with
#   copies from pageable memory after one warning line;
#   device ring (feederd --gpu 0, placement gpu, batches in GPU memory by
#   CUDA IPC): the same epochs, indices and labels, and features within
#   1e-4 of the CPU pipeline's (the GPU's normalization sums in another
#   order).
# Skips (77) first thing when there is no CUDA device, before building any
# data; then, with the reason, where the build lacks the audio libraries
# (packer cannot pack speech) or no Python has numpy.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
bench=$build/tests/xvec_cuda
why=$("$bench/xvec_gpu_bench" --probe 2>&1) || skip "${why#xvec_gpu_bench: }"
need_python numpy
make_speech speech 6 5 3 --features mfcc --ceps 30
start_daemon --workers "$(nproc)" --log-level warning || fail "$daemon_why"

out=$("$bench/xvec_feed_bench" --dataset speech --socket "$sock" --batch 8 --chunk 40 \
	--steps 30 --log 10 --width 32 --pool 48 --embed 16 --eps 0.1 2>"$tmp/bench.log" | tail -n 1) \
	|| fail "xvec_feed_bench: $(tail -n 5 "$tmp/bench.log")"
echo "$out"
"$py" - "$out" <<'PY' || fail "bad result: $out"
import json, math, sys
r = json.loads(sys.argv[1])
assert r["steps"] == 30, r
assert math.isfinite(r["loss"]) and r["loss"] > 0, r
assert 0.0 <= r["gpu_wait_fraction"] <= 1.0 and r["gpu_span_ms"] > 0, r
PY

# Content: the host path, byte for byte.
common=(--dataset speech --socket "$sock" --batch 8 --chunk 40 --steps 12 --log 6 --width 32
	--pool 48 --embed 16)
"$bench/xvec_feed_bench" "${common[@]}" --dump-host "$tmp/ref.bin" >/dev/null 2>"$tmp/bench.log" \
	|| fail "host reference: $(tail -n 5 "$tmp/bench.log")"
"$bench/xvec_feed_bench" "${common[@]}" --dump "$tmp/host.bin" >"$tmp/host.json" 2>"$tmp/bench.log" \
	|| fail "host ring: $(tail -n 5 "$tmp/bench.log")"
cmp -s "$tmp/ref.bin" "$tmp/host.bin" || fail "batches fed from the host ring differ from the stream's"
echo "host ring: 12 batches identical to the stream's"

# The same from pageable memory, as where cudaHostRegister fails: one
# warning, the same bytes, every slot released after its copy.
FEEDER_TEST_NO_PIN=1 "$bench/xvec_feed_bench" "${common[@]}" --dump "$tmp/pageable.bin" \
	>/dev/null 2>"$tmp/bench.log" || fail "pageable copies: $(tail -n 5 "$tmp/bench.log")"
n=$(grep -c "not registered with CUDA (FEEDER_TEST_NO_PIN=1): copying batches from pageable" \
	"$tmp/bench.log")
[ "$n" = 1 ] || fail "the pageable fallback was said $n times, not once: $(cat "$tmp/bench.log")"
cmp -s "$tmp/ref.bin" "$tmp/pageable.bin" || fail "batches copied from pageable memory differ"
echo "pageable copies: 12 batches identical to the stream's"

# The device ring: feederd preprocesses on GPU 0 and shares the batches.
stop_daemon 10
start_daemon --workers "$(nproc)" --log-level warning --gpu 0 || fail "feederd --gpu 0: $daemon_why"
"$bench/xvec_feed_bench" "${common[@]}" --placement gpu --dump "$tmp/dev.bin" >"$tmp/dev.json" \
	2>"$tmp/bench.log" || fail "device ring: $(tail -n 5 "$tmp/bench.log")"
grep -q '"memory": "device"' "$tmp/dev.json" || fail "no device ring: $(cat "$tmp/dev.json")"
"$py" - "$tmp/ref.bin" "$tmp/dev.bin" <<'PY' || fail "device-ring batches differ"
import struct, sys
import numpy as np
def batches(path):
    b = open(path, "rb").read()
    off, out = 0, []
    while off < len(b):
        epoch, index, count = struct.unpack_from("<3Q", b, off); off += 24
        labels = np.frombuffer(b, "<i4", count, off); off += 4 * count
        n = count * 30 * 40
        x = np.frombuffer(b, "<f4", n, off); off += 4 * n
        out.append((epoch, index, labels, x))
    return out
ref, dev = batches(sys.argv[1]), batches(sys.argv[2])
assert len(ref) == len(dev) == 12, (len(ref), len(dev))
worst = 0.0
for k, (r, d) in enumerate(zip(ref, dev)):
    assert r[0] == d[0] and r[1] == d[1], f"batch {k}: position {d[:2]} vs {r[:2]}"
    assert (r[2] == d[2]).all(), f"batch {k}: labels differ"
    err = float(np.abs(r[3] - d[3]).max()) / max(float(np.abs(r[3]).max()), 1e-30)
    worst = max(worst, err)
    assert err <= 1e-4, f"batch {k}: features differ by {err:.3g} (relative to the largest)"
print(f"device ring: 12 batches, positions and labels identical, features within {worst:.3g}")
PY
exit 0
