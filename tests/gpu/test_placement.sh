#!/bin/bash
# test_placement.sh — stream placement (cpu / gpu / auto) through a real
# feederd and libfeeder:
#   * without --gpu, placement=gpu is refused with a sentence that says why,
#     placement=auto quietly runs on the CPU (the same bytes as cpu) and
#     feederctl streams says "auto -> cpu (no GPU)";
#   * feederd --gpu 0 on a machine without a usable GPU does not start, and
#     says why (skipped where a GPU is present);
#   * with the GPU emulated on the host (FEEDERD_GPU_EMULATE=1: the GPU path's
#     staging by worker threads, its batch submission and its per-element
#     code, but no CUDA), placement=gpu delivers the same labels as cpu and
#     pixels within the jpeg pipeline's tolerance (mean |diff| <= 2/255), and
#     placement=auto measures both ways, decides, and feederctl prints the
#     choice with the two costs;
#   * a client that asks for device batches it cannot open (the daemon's
#     GPU is not visible to it: FEEDER_TEST_CLAIM_DEVICE=1 makes libfeeder
#     ask while it has no device, so the emulated daemon offers a device
#     ring) gets its stream on the host ring instead, with one line on
#     stderr saying so, and the same batches as placement=gpu's host ring;
#     the daemon holds no stream of it afterwards.
# The CUDA kernels themselves are tested by test_gpu_jpeg / test_gpu_features
# on a machine with a GPU.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_python numpy
rc_client=$build/tests/fault/restart_client
need_exe "$rc_client"

make_images imgs 30 3 5
run() { "$rc_client" --socket "$sock" --dataset imgs --batch 4 "$@"; }
checks=0

start_daemon || fail "$daemon_why"
run --placement gpu --out "$tmp/g.txt" >"$tmp/g.log" 2>&1 && fail "placement=gpu served without a GPU"
grep -q "placement=gpu, but feederd runs without a GPU" "$tmp/g.log" ||
	fail "placement=gpu without a GPU: no clear refusal: $(cat "$tmp/g.log")"
checks=$((checks + 1))
run --placement cpu --out "$tmp/cpu.txt" >/dev/null 2>&1 || fail "placement=cpu stream"
spawn "$tmp/auto.log" run --placement auto --out "$tmp/auto.txt" --delay-ms 100
apid=$spawned
# streams_show PATTERN: feederctl streams shows PATTERN (grep -E).
streams_show() {
	"$feederctl" --socket "$sock" streams > "$tmp/streams.txt" 2>&1
	grep -Eq "$1" "$tmp/streams.txt"
}
wait_until 5 streams_show "auto -> cpu \(no GPU\)" || fail "feederctl streams does not show auto -> cpu: $(cat "$tmp/streams.txt")"
wait "$apid" || fail "placement=auto stream: $(cat "$tmp/auto.log")"
bg_pids=()
cmp -s "$tmp/cpu.txt" "$tmp/auto.txt" || fail "placement=auto without a GPU gave other bytes than cpu"
checks=$((checks + 2))
stop_daemon || fail "$daemon_why"

# --gpu 0 where CUDA sees no device: a start-up error naming --gpu.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	"$feederd" --config /dev/null --socket "$tmp/x.sock" --datasets "$datasets" --gpu 0 \
		>"$tmp/gpu0.log" 2>&1 && fail "feederd --gpu 0 started without a GPU"
	grep -q "cannot start: --gpu 0: " "$tmp/gpu0.log" ||
		fail "feederd --gpu 0 without a GPU: unclear error: $(cat "$tmp/gpu0.log")"
	head -n 1 "$tmp/gpu0.log"
	checks=$((checks + 1))
fi

# The GPU placement path with the device emulated on the host.
FEEDERD_GPU_EMULATE=1 start_daemon --gpu 0 || fail "$daemon_why"
grep -q "emulated on the host" "$tmp/feederd.log" || fail "feederd did not say the GPU is emulated"
for mode in train eval; do
	extra=()
	[ $mode = eval ] && extra=(--eval)
	run "${extra[@]}" --placement cpu --out "$tmp/c-$mode.txt" --dump "$tmp/c-$mode.bin" \
		>"$tmp/c.log" 2>&1 || fail "cpu stream ($mode): $(cat "$tmp/c.log")"
	run "${extra[@]}" --placement gpu --out "$tmp/g-$mode.txt" --dump "$tmp/g-$mode.bin" \
		>"$tmp/g.log" 2>&1 || fail "gpu stream ($mode): $(cat "$tmp/g.log")"
	labels() { awk '{ for (i = 3; i <= NF; i++) { split($i, a, ":"); printf "%s ", a[1] } print "" }' "$1"; }
	[ "$(labels "$tmp/c-$mode.txt")" = "$(labels "$tmp/g-$mode.txt")" ] ||
		fail "placement=gpu ($mode): other labels or order than cpu"
	"$py" - "$tmp/c-$mode.bin" "$tmp/g-$mode.bin" $mode <<'PY' || fail "placement=gpu ($mode): pixels differ from cpu"
import sys
import numpy as np
a = np.fromfile(sys.argv[1], np.uint8).astype(np.int16)
b = np.fromfile(sys.argv[2], np.uint8).astype(np.int16)
assert a.size == b.size and a.size == 30 * 3 * 32 * 32, (a.size, b.size)
d = np.abs(a - b)
print("placement gpu vs cpu (%s): %d values, mean |diff| %.4f/255, max %d/255" % (sys.argv[3], a.size, d.mean(), d.max()))
sys.exit(0 if d.mean() <= 2.0 else 1)
PY
	checks=$((checks + 1))
done
# Device batches that cannot be opened here: the host ring instead.
FEEDER_TEST_CLAIM_DEVICE=1 run --placement gpu --device-batches --out "$tmp/d.txt" --dump "$tmp/d.bin" \
	>"$tmp/d.log" 2>&1 || fail "device batches unavailable: the stream failed: $(cat "$tmp/d.log")"
n=$(grep -c "libfeeder: device batches of dataset 'imgs' are not available in this process" "$tmp/d.log")
[ "$n" = 1 ] || fail "the fallback was said $n times, not once: $(cat "$tmp/d.log")"
grep -q "its batches come through the host ring" "$tmp/d.log" || fail "unclear fallback line: $(cat "$tmp/d.log")"
cmp -s "$tmp/d.txt" "$tmp/g-train.txt" && cmp -s "$tmp/d.bin" "$tmp/g-train.bin" \
	|| fail "the fallback stream's batches differ from placement=gpu on the host ring"
grep "libfeeder: device batches" "$tmp/d.log"
"$feederctl" --socket "$sock" status --json >"$tmp/st.json" || fail "feederctl status"
[ "$(json_get "$tmp/st.json" streams)" = 0 ] || fail "streams left after the fallback: $(cat "$tmp/st.json")"
checks=$((checks + 1))
spawn "$tmp/a.log" run --placement auto --epochs 3 --out "$tmp/a.txt" --delay-ms 40
apid=$spawned
wait_until 10 streams_show "auto -> (cpu|gpu) \(cpu [0-9.]+ ms, gpu [0-9.]+ ms a batch\)" || fail "placement=auto did not decide: $(cat "$tmp/streams.txt")"
grep -o "auto -> .*" "$tmp/streams.txt"
wait "$apid" || fail "placement=auto stream (emulated GPU): $(cat "$tmp/a.log")"
bg_pids=()
[ "$(wc -l < "$tmp/a.txt")" = 24 ] || fail "placement=auto: $(wc -l < "$tmp/a.txt") batches, not 24"
grep "placement=auto chose" "$tmp/feederd.log" | tail -n 1
checks=$((checks + 1))
stop_daemon || fail "$daemon_why"
echo "ok: $checks placement checks (refusal, auto without a GPU, --gpu 0 start-up error," \
	"emulated GPU: train/eval pixels and labels vs cpu, device batches falling back to the" \
	"host ring, auto's decision)"

# A device ring the device cannot hold (the emulated device gets 16 KiB for
# rings; the stream asks for three 12 KiB slots): feederd serves the host
# ring instead and says so once in its log, naming the stream and the
# reason; libfeeder learns it from STREAM_OPENED (memory=host), so it has
# nothing to fall back from and says nothing, and the batches are those of
# placement=gpu's host ring.
FEEDERD_GPU_EMULATE=1 FEEDERD_GPU_EMULATE_DEVICE_KB=16 start_daemon --gpu 0 || fail "$daemon_why"
FEEDER_TEST_CLAIM_DEVICE=1 run --placement gpu --device-batches --out "$tmp/r.txt" --dump "$tmp/r.bin" \
	>"$tmp/r.log" 2>&1 || fail "a device ring too large failed the stream: $(cat "$tmp/r.log")"
grep -q "libfeeder: device batches" "$tmp/r.log" &&
	fail "libfeeder fell back on its own: feederd offered a device ring: $(cat "$tmp/r.log")"
cmp -s "$tmp/r.txt" "$tmp/g-train.txt" && cmp -s "$tmp/r.bin" "$tmp/g-train.bin" ||
	fail "the host ring's batches differ from placement=gpu's"
n=$(grep -c "device batches were asked for, but its device ring cannot be made" "$tmp/feederd.log")
[ "$n" = 1 ] || fail "the device ring's failure was logged $n times, not once"
grep -Eq "stream [0-9]+: device batches were asked for, but its device ring cannot be made \(cudaMalloc of the device ring failed: out of memory .*\): its batches come through the host ring" \
	"$tmp/feederd.log" || fail "unclear warning: $(grep 'device ring cannot' "$tmp/feederd.log")"
grep "device ring cannot be made" "$tmp/feederd.log" | sed 's/^<[0-9]>//'
stop_daemon || fail "$daemon_why"
echo "ok: a device ring the device cannot hold: the host ring, said once"
