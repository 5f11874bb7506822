#!/usr/bin/env bash
# gpu_pipeline.sh — the jpeg pipeline with and without the GPU (not a test;
# about a minute on a GPU machine with 16 cores).
#
# usage: tests/bench/gpu_pipeline.sh [N]      (default N=2000 images; 64 when DRY)
#
# Generates N ImageNet-like JPEGs with gen-images, packs them with packer
# (full size, no pre-resize) and runs gpu_pipeline_bench on them:
# RandomResizedCrop 224 + flip + normalize to f16 NCHW in batches of 256, at
# each thread count of THREADS, three ways: cpu (workers do everything), gpu
# (workers decode only the crop's region, the device does the rest, the batch
# stays in device memory) and gpu+host (the same, copied back into pinned
# host memory): images/s and CPU core-seconds per 1,000 images. Then the same
# through feederd end to end (--workers = all cores, --gpu 0): feeder-bench
# streams with placement=cpu, placement=gpu (host ring) and placement=gpu with
# device-resident batches (CUDA IPC): the daemon's images/s and its CPU
# core-seconds per 1,000 images (from /proc/PID/stat).
# Goal: gpu >= 1.5 x the images/s of cpu at equal threads, or the same
# images/s at <= half the CPU time.
#
# Without a CUDA device the gpu columns and rows read "skipped: <reason>" and
# the cpu ones run at small sizes (DRY=1, chosen automatically: the CI dry
# run). Environment (besides bench_run.sh's): THREADS (default "4 <all
# cores>"; "2" when DRY), BATCHES (batches per measurement, 20; 2 when DRY),
# BATCH (256; 32 when DRY), FEEDER_PYTHON; time budgets in seconds T_DATA
# (120), T_BENCH (90 each), T_FEED (60 each).
set -uo pipefail
# shellcheck source=tests/bench/bench_run.sh
. "$(dirname "$0")/bench_run.sh"
bench_init gpu_pipeline
cores=$(nproc)
tool=$build/tests/gpu/gpu_pipeline_bench
bench_probe "$tool" --check-device
if [ "$DRY" = 1 ]; then
	N=${1:-64} THREADS=${THREADS:-2} BATCHES=${BATCHES:-2} BATCH=${BATCH:-32}
else
	N=${1:-2000} THREADS=${THREADS:-$(printf '%s\n' 4 "$cores" | sort -nu | tr '\n' ' ')}
	BATCHES=${BATCHES:-20} BATCH=${BATCH:-256}
fi
echo "gpu_pipeline: device: $([ -n "$gpu_why" ] && echo "none ($gpu_why)" || echo yes);" \
	"DRY=$DRY, $N images, threads $THREADS, $BATCHES batches of $BATCH" >&2

data_ok=0
bench_run gen_images "${T_DATA:-120}" "$build/tools/gen/gen-images" "$N" "$tmp/src" \
	--classes $((N >= 1000 ? 100 : (N + 9) / 10)) --seed 1 --threads "$cores" &&
	bench_run pack "${T_DATA:-120}" "$build/packer/packer" pack images --threads "$cores" \
		"$tmp/src" "$datasets/imgs" && data_ok=1
rm -rf "$tmp/src"

# The pipeline alone, per thread count (the cpu mode only without a device;
# no tool: gpu_why says why).
run=(--batch "$BATCH" --batches "$BATCHES" --json)
why=$([ "$data_ok" != 1 ] && echo "no dataset" || echo "$gpu_why")
for t in $THREADS; do
	if [ "$data_ok" != 1 ] || [ ! -x "$tool" ]; then
		bench_skip "bench_t$t" "$why"
	else
		# shellcheck disable=SC2086 # ${gpu_why:+...} is two words or none
		bench_run "bench_t$t" "${T_BENCH:-90}" "$tool" "$datasets/imgs" --threads "$t" \
			"${run[@]}" ${gpu_why:+--mode cpu}
	fi
	if [ -n "$why" ]; then
		bench_skip "bench_host_t$t" "$why"
	else
		bench_run "bench_host_t$t" "${T_BENCH:-90}" "$tool" "$datasets/imgs" \
			--threads "$t" "${run[@]}" --mode gpu --host
	fi
done

# End to end through feederd, one feeder-bench stream at a time; the
# daemon's CPU time around each (utime + stime in clock ticks).
ticks() { awk '{ print $14 + $15 }' "/proc/${daemon_proc:-none}/stat" 2>/dev/null; }
daemon_gpu_why=$gpu_why
if [ "$data_ok" = 1 ] && bench_daemon_gpu feederd --workers "$cores"
then
	for mode in cpu gpu gpu-device; do
		if [ $mode != cpu ] && [ -n "$daemon_gpu_why" ]; then
			bench_skip "feed_$mode" "$daemon_gpu_why"
			continue
		fi
		args=(--placement "${mode%%-*}")
		[ $mode = gpu-device ] && args+=(--device-batches)
		t0=$(ticks)
		bench_run "feed_$mode" "${T_FEED:-60}" "$build/tools/feeder-bench" --socket "$sock" \
			--dataset imgs --batch "$BATCH" --size 224 --dtype f16 --batches "$BATCHES" \
			--workers "$cores" "${args[@]}" --json
		t1=$(ticks)
		[ -n "$t0" ] && [ -n "$t1" ] &&
			echo "$((t1 - t0)) $(getconf CLK_TCK)" >"$LOGDIR/gpu_pipeline.feed_$mode.ticks"
	done
	bench_daemon_stop
else
	for mode in cpu gpu gpu-device; do bench_skip "feed_$mode" "no dataset or no feederd"; done
fi

py=$(find_python json) || { echo "gpu_pipeline: $py" >&2; exit 1; }
gpu=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
"$py" - "$src/tests/bench" "$LOGDIR" "${gpu:-${gpu_why:+no device}}" "$cores" "$N" "$BATCH" \
	"$BATCHES" "$THREADS" "$([ -z "$daemon_gpu_why" ] && echo --gpu 0)" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from bench_table import Steps, row, met  # noqa: E402

st = Steps(sys.argv[2], "gpu_pipeline")
gpu, cores, n, batch, batches = sys.argv[3] or "unknown GPU", *sys.argv[4:8]
threads, gpu_opt = sys.argv[8].split(), sys.argv[9]


def num(v, fmt):
    return format(v, fmt) if v is not None else "—"


print(f"{n} generated images (packed full size), RandomResizedCrop 224 + flip + normalize "
      f"-> f16 NCHW, batch {batch}, {batches} batches; {gpu}, {cores} cores\n")
row("threads", "cpu images/s", "gpu images/s", "gpu+host images/s", "cpu core-s/1000",
    "gpu core-s/1000", "gpu+host core-s/1000", "gpu/cpu images/s", "gpu/cpu CPU time",
    "goal met")
row(*["---"] * 10)
skipped, notes = set(), []
for t in threads:
    d, h = st.json(f"bench_t{t}"), st.json(f"bench_host_t{t}")
    if not d:
        row(t, st.why(f"bench_t{t}"), *["—"] * 8)
        continue
    c, cc = d["cpu_images_per_s"], d["cpu_core_s_per_1000"]
    g, gc = d.get("gpu_images_per_s"), d.get("gpu_core_s_per_1000")
    gh, ghc = (h["gpu_images_per_s"], h["gpu_core_s_per_1000"]) if h else (None, None)
    skip = None
    if g is None:
        skipped.add(st.why(f"bench_host_t{t}"))
        skip = "skipped"
    ok = None if g is None else (g / c >= 1.5 or (g / c >= 1.0 and gc / cc <= 0.5))
    row(t, num(c, ".0f"), skip or num(g, ".0f"), skip or num(gh, ".0f"), num(cc, ".2f"),
        skip or num(gc, ".2f"), skip or num(ghc, ".2f"),
        "—" if g is None else f"{g / c:.2f}x", "—" if g is None else f"{gc / cc:.2f}x", met(ok))
    for r in (d, h):
        if r and r.get("gpu_cpu_finished"):
            notes.append(f"{t} threads: {r['gpu_cpu_finished']} samples were finished on the CPU "
                      f"(staging too small)")
for note in sorted(skipped) + notes:
    print(f"\ngpu columns {note}" if note in skipped else f"\n{note}")

print(f"\nfeederd --workers {cores}{' ' + gpu_opt if gpu_opt else ''}, feeder-bench --batch {batch} --size 224 --dtype f16 "
      f"--batches {batches}:\n")
row("placement", "images/s", "daemon core-s/1000 images")
row("---", "---", "---")
for mode in ("cpu", "gpu", "gpu-device"):
    r = st.json(f"feed_{mode}")
    if not r:
        row(mode, st.why(f"feed_{mode}"), "—")
        continue
    try:
        dt, tck = (int(x) for x in open(st.path(f"feed_{mode}", "ticks")).read().split())
        cpu = f"{dt / tck / r['images'] * 1000:.2f}"
    except (OSError, ValueError, ZeroDivisionError):
        cpu = "n/a"
    row(mode, f"{r['images_per_s']:.0f}", cpu)
print(f"\nLogs and commands: {st.dir} (gpu_pipeline.commands)")
PY
bench_exit
