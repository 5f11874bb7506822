#!/usr/bin/env bash
# tests/bench/fairness.sh [N] — what a heavy neighbour does to a normal
# client: a light client (1 stream, RandomResizedCrop 224 f16,
# batch 32) alone, then next to a heavy one (one process, 8 streams of
# 1024x1024 float32 outputs), on one feederd with --workers = cores. Prints
# the light client's images/s and p99 wait both ways and the share kept.
# FEEDERD=/path/to/feederd compares another build of the daemon (e.g. an
# older commit's) with the same clients.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
N=${1:-2000}
build=${FEEDER_BUILD:-$src/build}
feederd=${FEEDERD:-$build/daemon/feederd}
[ -f "$build/build.ninja" ] || meson setup "$build" -Dwerror=true >/dev/null
ninja -C "$build" >/dev/null
imgs=/tmp/feeder-bench-images-$N
work=$(mktemp -d /tmp/feeder-fair.XXXXXX)
daemon= heavy=
trap '[ -n "$heavy" ] && kill $heavy 2>/dev/null; [ -n "$daemon" ] && kill $daemon 2>/dev/null; rm -rf "$work"' EXIT
[ -d "$imgs" ] || tools/gen/gen-images "$N" "$imgs" --classes 10 --seed 7 >&2
mkdir -p "$work/datasets"
"$build/packer/packer" pack images "$imgs" "$work/datasets/images" >/dev/null 2>&1
"$feederd" --config /dev/null --socket "$work/s.sock" --datasets "$work/datasets" \
  --workers "$(nproc)" --memory-limit 8G --log-level warning 2>"$work/feederd.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
export FEEDER_SOCKET=$work/s.sock
light() {
  "$build/tools/feeder-bench" --dataset images --batch 32 --size 224 --dtype f16 --batches 40 \
    --seed "$1" --json
}
alone=$(light 1)
"$build/tools/feeder-bench" --dataset images --batch 8 --size 1024 --dtype f32 --streams 8 \
  --slots 2 --batches 100000 --json >/dev/null 2>&1 &
heavy=$!
sleep 3 # the heavy client fills its rings and keeps the workers busy
beside=$(light 2)
kill $heavy 2>/dev/null; wait $heavy 2>/dev/null || true; heavy=
/usr/bin/python3 - "$alone" "$beside" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("| light client | images/s | p99 wait (ms) |")
print("|---|---|---|")
print("| alone | %.0f | %.1f |" % (a["images_per_s"], a["wait_p99_us"] / 1e3))
print("| next to 8 streams of 1024x1024 f32 | %.0f | %.1f |" % (b["images_per_s"], b["wait_p99_us"] / 1e3))
print("share kept: %.0f %% (a fair share of the workers is 50 %%)" % (100 * b["images_per_s"] / a["images_per_s"]))
PY
