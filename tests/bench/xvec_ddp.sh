#!/usr/bin/env bash
# tests/bench/xvec_ddp.sh [STEPS] — data-parallel xvec on this machine, and
# on paper for clusters (not a test).
#
# Measured, paper widths (512/1500/512, 30-dim MFCC, chunk 200, noise 0.1),
# global batch 32, two rounds alternating:
#   A. 1 rank x 2 threads (batch 32)     xvec train
#   B. 2 ranks x 1 thread (batch 16 each) mpirun -np 2 xvec train --sync-bn
# samples/s of both, and B's gradient all-reduce as a share of its time
# (goal < 5 %). Also feederd's features pipeline with one worker (chunks/s a
# core delivers), for the table below.
#
# On paper: the gradient bytes per step (the model's parameters, fp32, for
# this dataset's 40 speakers and for VoxCeleb2's 5,994), the ring
# all-reduce's time per step, 2 (N-1)/N x bytes / bandwidth, for 8 GPUs on
# NVLink (450 GB/s a direction) and 2/8/32 nodes on 100 and 400 Gb/s, and the
# chunks/s a node's feederd must deliver to keep 8 GPUs busy at a given step
# rate against what one core delivers today.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
cd "$src"
STEPS=${1:-12}
export FEEDER_BUILD=$build
command -v mpirun >/dev/null || { echo "xvec_ddp.sh: mpirun is not installed (tools/install-deps)" >&2; exit 2; }
"$build/xvec/xvec" --help 2>&1 | grep -q "data parallel in this build: MPI" \
  || { echo "xvec_ddp.sh: xvec is built without MPI (meson -Dmpi=enabled)" >&2; exit 2; }
need_python numpy cffi
threads=$(nproc)
make_speech sp 40 30 1 --features mfcc --ceps 30
start_daemon --workers 1 --log-level warning || fail "$daemon_why"
export FEEDER_SOCKET=$sock
x=$build/xvec/xvec
mpi=(mpirun --oversubscribe --mca btl self,vader)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
paper=(--dataset sp --chunk 200 --width 512 --pool-width 1500 --embed 512 --noise-eps 0.1
  --lr 0.001 --epochs 1000)
rate() { grep '^step ' "$1" | tail -1 | sed -E 's/.* samples\/s ([0-9.]+) .*/\1/'; }
share() { sed -nE "s/.*all-reduce took ([0-9.]+)% of rank 0's time.*/\1/p" "$1"; }
# the first 2 steps warm up; the figure is the last interval of STEPS steps
OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 "$x" train "${paper[@]}" --batch 32 --steps 4 \
  --log-every 2 --out "$tmp/warm" >/dev/null
ones=() twos=() shares=()
for round in 1 2; do
  OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 "$x" train "${paper[@]}" --batch 32 \
    --steps $((STEPS + 2)) --log-every "$STEPS" --out "$tmp/one" >"$tmp/one.log"
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "${mpi[@]}" -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS \
    -np 2 "$x" train "${paper[@]}" --batch 16 --sync-bn --steps $((STEPS + 2)) \
    --log-every "$STEPS" --out "$tmp/two" >"$tmp/two.log"
  ones+=("$(rate "$tmp/one.log")") twos+=("$(rate "$tmp/two.log")") shares+=("$(share "$tmp/two.log")")
  echo "round $round: 1 rank x 2 threads ${ones[-1]} samples/s; 2 ranks x 1 thread ${twos[-1]} samples/s, all-reduce ${shares[-1]} % of the time" >&2
done
params=$("$build/tests/xvec/ckpt_diff" "$tmp/one" "$tmp/one" | sed -E 's/^params ([0-9]+) .*/\1/')
# feederd's features pipeline, one worker: chunks/s a core delivers (the
# Python Loader as the consumer; its cost per batch is microseconds)
fb=$(PYTHONPATH=$build/client/python "$py" - <<'PY'
import json, time
import feeder
ld = feeder.Loader("sp", 32, pipeline=feeder.Features(chunk_len=200), dtype="float32", epoch=0,
                   shuffle=True, drop_last=True)
it = iter(ld)
for _ in range(5):
    next(it)
n, t0 = 0, time.monotonic()
for e in range(1, 100):
    ld.set_epoch(e)
    for d, _ in ld:
        n += d.shape[0]
    if time.monotonic() - t0 > 3:
        break
print(json.dumps({"images_per_s": n / (time.monotonic() - t0)}))
PY
)
"$py" - "$params" "$fb" "${ones[*]}" "${twos[*]}" "${shares[*]}" <<'PY'
import json, sys
params = int(sys.argv[1])
try:
    fb = json.loads(sys.argv[2])
except ValueError:
    fb = {}
ones = [float(v) for v in sys.argv[3].split()]
twos = [float(v) for v in sys.argv[4].split()]
shares = [float(v) for v in sys.argv[5].split()]
print("### xvec data parallel, paper widths, global batch 32 (2 cores)\n")
print("| | round 1 | round 2 |")
print("|---|---:|---:|")
print("| 1 rank x 2 threads, samples/s | %s |" % " | ".join("%.1f" % v for v in ones))
print("| 2 ranks x 1 thread (mpirun, --sync-bn), samples/s | %s |" % " | ".join("%.1f" % v for v in twos))
print("| all-reduce share of the 2-rank run's time (goal < 5 %%) | %s |" % " | ".join("%.2f %%" % v for v in shares))
print()
# The model: frame layers 30*5 -> 512, 512*3 -> 512 (x2), 512 -> 512, 512 -> 1500;
# segment 3000 -> 512, 512 -> 512, 512 -> speakers; plus biases and BN scales.
def count(speakers):
    w = 30 * 5 * 512 + 512 * 3 * 512 * 2 + 512 * 512 + 512 * 1500 + 3000 * 512 + 512 * 512 + 512 * speakers
    b = 512 * 4 + 1500 + 512 * 2 + speakers
    bn = 2 * (512 * 4 + 1500 + 512 * 2)
    return w + b + bn
assert count(40) == params, (count(40), params)
rate = fb.get("images_per_s", 0.0)
print("Gradient per step: %d parameters (40 speakers) = %.1f MB fp32; with VoxCeleb2's 5,994 "
      "speakers %d = %.1f MB." % (params, params * 4 / 1e6, count(5994), count(5994) * 4 / 1e6))
print("feederd, features pipeline, 1 worker: %.0f chunks/s (batch 32, chunk 200)." % rate)
print()
print("Ring all-reduce per step, 2 (N-1)/N x bytes / bandwidth, VoxCeleb2 model (%.1f MB):\n"
      % (count(5994) * 4 / 1e6))
print("| ranks | link | bandwidth | all-reduce per step |")
print("|---|---|---:|---:|")
gb = count(5994) * 4
rows = [("8 GPUs, one node", "NVLink 4 (H100)", 450e9, 8)]
for nodes in (2, 8, 32):
    for gbit in (100, 400):
        rows.append(("%d nodes x 8 GPUs" % nodes, "%d Gb/s per node" % gbit, gbit / 8 * 1e9, nodes))
for who, link, bw, n in rows:
    t = 2 * (n - 1) / n * gb / bw
    print("| %s | %s | %.1f GB/s | %.2f ms |" % (who, link, bw / 1e9, t * 1e3))
print()
need = [1000, 5000, 20000]
print("Chunks/s a node's feederd must deliver for 8 GPUs at a given rate per GPU, in cores at "
      "today's %.0f chunks/s a core:\n" % rate)
print("| chunks/s per GPU | per node (8 GPUs) | feederd cores |")
print("|---:|---:|---:|")
for r in need:
    print("| %d | %d | %.1f |" % (r, 8 * r, 8 * r / rate if rate else float("nan")))
PY
