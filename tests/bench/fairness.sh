#!/usr/bin/env bash
# tests/bench/fairness.sh [N] — what a heavy neighbour does to a normal
# client: a light client (1 stream, RandomResizedCrop 224 f16,
# batch 32) alone, then next to a heavy one (one process, 8 streams of
# 1024x1024 float32 outputs), on one feederd with --workers = cores. Prints
# the light client's images/s and p99 wait both ways and the share kept.
# FEEDERD=/path/to/feederd compares another build of the daemon (e.g. an
# older commit's) with the same clients.
set -euo pipefail
. "$(dirname "$0")/bench_run.sh"
N=${1:-2000}
feederd=${FEEDERD:-$feederd}
bench_build
imgs=/tmp/feeder-bench-images-$N
[ -d "$imgs" ] || gen_images "$imgs" "$N" 10 7
pack_images images "$imgs"
start_daemon --workers "$threads" --memory-limit 8G --log-level warning || fail "$daemon_why"
export FEEDER_SOCKET=$sock
light() {
  "$build/tools/feeder-bench" --dataset images --batch 32 --size 224 --dtype f16 --batches 40 \
    --seed "$1" --json
}
alone=$(light 1)
spawn /dev/null "$build/tools/feeder-bench" --dataset images --batch 8 --size 1024 --dtype f32 \
  --streams 8 --slots 2 --batches 100000 --json
sleep 3 # the heavy client fills its rings and keeps the workers busy
beside=$(light 2)
"$py" - "$alone" "$beside" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("| light client | images/s | p99 wait (ms) |")
print("|---|---|---|")
print("| alone | %.0f | %.1f |" % (a["images_per_s"], a["wait_p99_us"] / 1e3))
print("| next to 8 streams of 1024x1024 f32 | %.0f | %.1f |" % (b["images_per_s"], b["wait_p99_us"] / 1e3))
print("share kept: %.0f %% (a fair share of the workers is 50 %%)" % (100 * b["images_per_s"] / a["images_per_s"]))
PY
