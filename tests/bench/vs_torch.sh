#!/usr/bin/env bash
# tests/bench/vs_torch.sh [N] [BATCHES] — Feeder against PyTorch's DataLoader
# on the same images, in one run, on this machine's cores.
#
# Both sides do RandomResizedCrop 224 + horizontal flip + normalize (ImageNet
# mean/std) to float16 NCHW, batch 256, reading the same packed dataset (the
# PyTorch side through python3-lmdb + PIL, num_workers = cores; Feeder through
# feederd with --workers = cores and feeder-bench as the consumer). Also
# reported: the full-size decode ceiling (single-thread TurboJPEG decode rate
# x workers, measured by feeder-bench in the same run), feeder_stream_next wait
# p99, the daemon's memory beyond its rings (RssAnon + RssFile; the rings are
# RssShmem), and feeder.Loader from Python when the package is built.
# The dataset is packed as packer does by default, tiled by restart intervals
# (feederd decodes a crop's intervals only); the same images packed with
# --restart none are streamed too, train and eval (resize 256 + centre crop
# 224), so the table shows what tiling buys in the same run.
# Prints a markdown table for BENCHMARKS.md, and a `feederctl top` frame
# taken during the Feeder run.
# Environment: FEEDER_METRICS=1 runs feederd with Prometheus metrics on a
# unix socket and scrapes /metrics every second during the whole run (the
# cost of the reporting).
set -euo pipefail
. "$(dirname "$0")/bench_run.sh"
N=${1:-5000}
BATCHES=${2:-15}
# Every side times BATCHES batches after its first one (start-up: worker
# fork or connect, stream open, the first batch), as torch_images.py does.
consumed=$((BATCHES + 1))
bench_build "python3-torch python3-torchvision"
need_python torch torchvision PIL lmdb numpy cffi

imgs=/tmp/feeder-bench-images-$N
[ -d "$imgs" ] || gen_images "$imgs" "$N" 100 42
t0=$(date +%s.%N)
pack_images images "$imgs" -v
t1=$(date +%s.%N)
pack_images images_untiled "$imgs" --restart none
t2=$(date +%s.%N)
grep -v '^\s*$' "$tmp/packer-images.log" | tail -2 >&2
echo "packer: tiled $("$py" -c "print(f'{$N / ($t1 - $t0):.0f}')") files/s, untiled $("$py" -c "print(f'{$N / ($t2 - $t1):.0f}')") files/s ($cores threads)" >&2
# The packs leave ~1 GB of dirty pages whose writeback would otherwise land
# on the first stream measured (it ran 25-45 % slower than the same stream
# later in the run); written back and read once, every side below reads the
# datasets from the page cache.
sync
cat "$datasets"/*/data.mdb >/dev/null

metrics_args=()
[ "${FEEDER_METRICS:-0}" = 1 ] && metrics_args=(--metrics-listen "$tmp/metrics.sock")
start_daemon --workers "$cores" --log-level warning "${metrics_args[@]}" || fail "$daemon_why"
export FEEDER_SOCKET=$sock
if [ "${FEEDER_METRICS:-0}" = 1 ]; then
  spawn /dev/null bash -c 'while sleep 1; do curl -s --unix-socket "$1" http://feederd/metrics >/dev/null; done' \
    scraper "$tmp/metrics.sock"
  echo "metrics: scraping /metrics every second during the run" >&2
fi
# one frame of feederctl top during the main Feeder run
(sleep 1.6; "$feederctl" top --once > "$tmp/top.txt" 2>&1) &
topper=$!

# The daemon's own memory is RssAnon (heap, stacks); RssFile is mostly the
# dataset's LMDB pages it touched (page cache, shared and reclaimable); the
# rings are RssShmem.
rss() { awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a, f}' "/proc/$daemon_pid/status"; }
# stream DATASET [ARG...]: feeder-bench's JSON for $consumed batches of 256
stream() {
  "$build/tools/feeder-bench" --dataset "$1" --batch 256 --size 224 --dtype f16 "${@:2}" \
    --batches "$consumed" --datasets "$datasets" --json
}
read -r anon0 file0 < <(rss)
fb=$(stream images)
read -r anon1 file1 < <(rss)
# feeder_stream_next when the batch is already waiting: a consumer slower than the
# daemon (50 ms of simulated compute per batch of 32), so the ring is full
# when it asks; 150 batches so that the first (never ready) is not the p99.
fr=$("$build/tools/feeder-bench" --dataset images --batch 32 --size 224 --dtype f16 \
  --batches 150 --hold-us 50000 --json)
wait $topper || true
fe=$(stream images --eval)
fu=$(stream images_untiled)
fue=$(stream images_untiled --eval)
echo "feeder-bench eval: $fe" >&2
echo "feeder-bench untiled: $fu" >&2
echo "feeder-bench untiled eval: $fue" >&2
echo "feeder-bench (slow consumer): $fr" >&2
echo "feeder-bench: $fb" >&2
tb=$("$py" tests/bench/torch_images.py "$datasets/images" --batch 256 --size 224 \
  --batches "$BATCHES" --workers "$cores")
echo "pytorch: $tb" >&2
lb='{}'
if [ -f "$build/client/python/feeder/__init__.py" ] && [ -f tests/bench/loader_bench.py ]; then
  lb=$(PYTHONPATH=$build/client/python "$py" tests/bench/loader_bench.py \
    --dataset images --batch 256 --size 224 --dtype float16 --batches "$consumed" --socket "$sock")
  echo "feeder.Loader: $lb" >&2
fi
"$py" - "$fb" "$tb" "$lb" "$fr" "$anon0" "$file0" "$anon1" "$file1" "$N" "$cores" "$fe" "$fu" "$fue" <<'PY'
import json, sys
fb, tb, lb, fr = (json.loads(a) for a in sys.argv[1:5])
anon0, file0, anon1, file1, n, cores = (int(a) for a in sys.argv[5:11])
fe, fu, fue = (json.loads(a) for a in sys.argv[11:14])
f, t = fb["images_per_s"], tb["images_per_s"]
c = fb.get("ceiling_images_per_s") or float("nan")
print(f"\n{n} generated images, RandomResizedCrop 224 + flip + normalize -> f16 NCHW, batch 256, {cores} cores\n")
print("| pipeline | images/s | vs PyTorch | vs decode ceiling |")
print("|---|---:|---:|---:|")
print(f"| PyTorch DataLoader (PIL, python3-lmdb, {tb['workers']} workers) | {t:.0f} | 1.00x | {t / c:.2f}x |")
print(f"| Feeder: feederd + feeder-bench ({cores} workers), tiled dataset | {f:.0f} | {f / t:.2f}x | {f / c:.2f}x |")
cu = fu.get("ceiling_images_per_s") or float("nan")
print(f"| Feeder, the same images untiled (--restart none) | {fu['images_per_s']:.0f} | {fu['images_per_s'] / t:.2f}x | {fu['images_per_s'] / cu:.2f}x of its own ceiling {cu:.0f} |")
print(f"| Feeder eval (resize 256 + centre crop 224), tiled | {fe['images_per_s']:.0f} | | {fe['images_per_s'] / c:.2f}x |")
print(f"| Feeder eval, untiled | {fue['images_per_s']:.0f} | | {fue['images_per_s'] / cu:.2f}x |")
if lb:
    l = lb["images_per_s"]
    print(f"| Feeder: feeder.Loader from Python | {l:.0f} | {l / t:.2f}x | {l / c:.2f}x |")
print(f"| full-size decode ceiling (1-thread TurboJPEG x {cores}) | {c:.0f} | {c / t:.2f}x | 1.00x |")
print()
print(f"feeder_stream_next wait, consumer faster than the daemon: mean {fb['wait_mean_us']:.1f} us, p99 {fb['wait_p99_us']:.1f} us")
print(f"feeder_stream_next wait, batch already ready (batch 32, 50 ms of compute per batch, 150 batches): mean {fr['wait_mean_us']:.1f} us, p99 {fr['wait_p99_us']:.1f} us")
if lb:
    print(f"feeder.Loader: {l / f * 100:.1f} % of feeder-bench, Python overhead {lb['overhead_us_per_batch']:.1f} us per batch")
print(f"feederd memory beyond its rings: RssAnon {anon0 / 1024:.1f} MiB idle, {anon1 / 1024:.1f} MiB after streaming; "
      f"RssFile (dataset pages mapped from the page cache, binaries) {file0 / 1024:.1f} -> {file1 / 1024:.1f} MiB")
PY
echo
echo "feederctl top --once during the feeder-bench run:"
echo '```'
cat "$tmp/top.txt"
echo '```'
