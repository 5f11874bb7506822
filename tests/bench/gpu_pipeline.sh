#!/bin/bash
# gpu_pipeline.sh — benchmark of the jpeg pipeline with and without the GPU
# (not a test; run by hand on a machine with a CUDA device).
#
# usage: tests/bench/gpu_pipeline.sh [N]      (default N=2000 images)
#
# Generates N ImageNet-like JPEGs with tools/gen-images, packs them with
# packer (full size, no pre-resize) and runs gpu_pipeline_bench on them:
# RandomResizedCrop 224 + flip + normalize to f16 NCHW in batches of 256,
# at several worker-thread counts, three ways: cpu (workers do everything),
# gpu (workers decode only the crop's region, the device does the rest,
# the batch stays in device memory) and gpu+host (the same, copied back
# into pinned host memory). Prints a markdown table of images/s and CPU
# core-seconds per 1,000 images. Then the same through feederd end to end:
# feeder-bench streams with placement=cpu, placement=gpu (host ring) and
# placement=gpu with device-resident batches (CUDA IPC), the daemon's
# images/s and its CPU core-seconds per 1,000 images (from /proc/PID/stat).
# Exits 77 with the reason where there is no CUDA device or the build has
# no CUDA.
# Environment: FEEDER_BUILD (default <source>/build), FEEDER_BENCH_THREADS
# (default "1 2 4 8 and all cores"), FEEDER_BENCH_BATCHES (default 20).
set -eu
N=${1:-2000}
SRC_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FEEDER_BUILD:-$SRC_ROOT/build}
BENCH=$BUILD/tests/gpu/gpu_pipeline_bench
GEN=$BUILD/tools/gen-images
PACKER=$BUILD/tools/packer
BATCHES=${FEEDER_BENCH_BATCHES:-20}
CORES=$(nproc)

if [ ! -x "$BENCH" ]; then
	echo "SKIP: $BENCH is not built (it needs a CUDA build: nvcc and -Dcuda=auto)"
	exit 77
fi
for x in "$GEN" "$PACKER"; do
	[ -x "$x" ] || { echo "gpu_pipeline.sh: $x is not built (ninja -C $BUILD)" >&2; exit 2; }
done
rc=0
"$BENCH" --check-device || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || true)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "generating and packing $N images ..." >&2
"$GEN" "$N" "$work/src" --classes 100 --seed 1 --threads "$CORES" >/dev/null
"$PACKER" pack images --threads "$CORES" "$work/src" "$work/ds" >/dev/null 2>"$work/packer.log" ||
	{ cat "$work/packer.log" >&2; exit 1; }
rm -rf "$work/src"

THREADS=${FEEDER_BENCH_THREADS:-$(for t in 1 2 4 8; do [ "$t" -lt "$CORES" ] && echo "$t"; done; echo "$CORES")}
echo
echo "$N generated images (packed full size), RandomResizedCrop 224 + flip + normalize -> f16 NCHW,"
echo "batch 256, $BATCHES batches; GPU: ${GPU:-unknown}, $CORES cores"
echo
echo "| threads | cpu images/s | gpu images/s | gpu+host images/s | cpu core-s/1000 | gpu core-s/1000 | gpu+host core-s/1000 | gpu/cpu images/s | gpu/cpu CPU time |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in $THREADS; do
	dev=$("$BENCH" "$work/ds" --threads "$t" --batch 256 --batches "$BATCHES" --json)
	host=$("$BENCH" "$work/ds" --threads "$t" --batch 256 --batches "$BATCHES" --mode gpu --host --json)
	/usr/bin/python3 - "$dev" "$host" <<'PY'
import json, sys
d, h = (json.loads(a) for a in sys.argv[1:3])
c, g, gh = d["cpu_images_per_s"], d["gpu_images_per_s"], h["gpu_images_per_s"]
cc, gc, ghc = d["cpu_core_s_per_1000"], d["gpu_core_s_per_1000"], h["gpu_core_s_per_1000"]
print(f"| {d['threads']} | {c:.0f} | {g:.0f} | {gh:.0f} | {cc:.2f} | {gc:.2f} | {ghc:.2f} | "
      f"{g / c:.2f}x | {gc / cc:.2f}x |")
if d["gpu_cpu_finished"] or h["gpu_cpu_finished"]:
    print(f"  ({d['gpu_cpu_finished']} / {h['gpu_cpu_finished']} samples were finished on the CPU: staging too small)",
          file=sys.stderr)
PY
done

# End to end: feederd with its GPU, one feeder-bench stream at a time.
FEEDERD=$BUILD/daemon/feederd
FBENCH=$BUILD/tools/feeder-bench
mkdir -p "$work/datasets"
mv "$work/ds" "$work/datasets/imgs"
"$FEEDERD" --config /dev/null --socket "$work/f.sock" --datasets "$work/datasets" \
	--workers "$CORES" --gpu 0 2>"$work/feederd.log" &
fpid=$!
trap 'kill $fpid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 200); do [ -S "$work/f.sock" ] && break; sleep 0.05; done
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$fpid/stat"; }
tck=$(getconf CLK_TCK)
echo
echo "feederd --workers $CORES --gpu 0, feeder-bench --batch 256 --size 224 --dtype f16 --batches $BATCHES:"
echo
echo "| placement | images/s | daemon core-s/1000 images |"
echo "|---|---|---|"
for mode in cpu gpu gpu-device; do
	args=(--placement "${mode%%-*}")
	[ $mode = gpu-device ] && args+=(--device-batches)
	t0=$(cpu_ticks)
	out=$("$FBENCH" --socket "$work/f.sock" --dataset imgs --batch 256 --size 224 --dtype f16 \
		--batches "$BATCHES" --datasets "$work/datasets" "${args[@]}" --json)
	t1=$(cpu_ticks)
	/usr/bin/python3 - "$out" "$t0" "$t1" "$tck" "$mode" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
t0, t1, tck = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ips = r["images_per_s"]
imgs = r["images"]
print(f"| {sys.argv[5]} | {ips:.0f} | {(t1 - t0) / tck / imgs * 1000:.2f} |")
PY
done
