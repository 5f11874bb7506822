#!/usr/bin/env bash
# tests/bench/xvec_gpu.sh — the GPU x-vector trainer against issue 5's "How good", in one run.
#
# Needs a CUDA device and a build with nvcc (the tools live in
# $FEEDER_BUILD/tests/xvec_cuda). Measures, on the same GPU:
#   noise cost   xvec step time with EPS = 0.1 vs EPS = 0 (goal: <= 2 %), and
#                PyTorch with the noise made on the CPU and copied
#                (torch.randn(x.size()).to(device) * eps) or on the GPU
#                (torch.randn_like(x) * eps), against its own EPS = 0
#   throughput   samples/s, paper widths 512/1500, batch 128, chunk 200,
#                30-dim input: xvec fp32/tf32/bf16 (autotuned) vs PyTorch
#                eager and torch.compile, fp32 and bf16 autocast (goal: xvec
#                >= 1.2 x the best PyTorch figure of the same precision class)
#   feed         xvec_feed_bench fed by feederd from a packed speech dataset:
#                fraction of GPU time spent waiting for data (goal: < 2 %)
#   H2D          h2d_bench: copies from a registered memfd ring vs from
#                cudaHostAlloc memory (goal: >= 90 %)
# Prints a markdown table for BENCHMARKS.md, with the GPU model and the
# commands. Without a device it says why and exits 77; without PyTorch (with
# CUDA) the PyTorch rows read n/a.
# Environment: FEEDER_BUILD (build dir), STEPS (timed steps, 50),
# SPEAKERS (softmax classes of the synthetic runs, 1000).
set -uo pipefail
cd "$(dirname "$0")/../.."
src=$(pwd)
build=${FEEDER_BUILD:-$src/build}
bench=$build/tests/xvec_cuda
STEPS=${STEPS:-50}
SPEAKERS=${SPEAKERS:-1000}
py=/usr/bin/python3

for t in xvec_gpu_bench xvec_feed_bench h2d_bench; do
  if [ ! -x "$bench/$t" ]; then
    echo "xvec_gpu.sh: $bench/$t is not built: this needs a build with nvcc (meson -Dcuda=enabled)" >&2
    exit 77
  fi
done
if ! gpu=$("$bench/xvec_gpu_bench" --probe 2>&1); then
  echo "xvec_gpu.sh: nothing measured: ${gpu#xvec_gpu_bench: }" >&2
  exit 77
fi
echo "GPU: $gpu" >&2

work=$(mktemp -d)
daemon=
trap '[ -n "$daemon" ] && kill "$daemon" 2>/dev/null; rm -rf "$work"' EXIT
results=$work/results.jsonl
: >"$results"

# record NAME COMMAND...: run, keep its JSON line under NAME (or an error).
record() {
  local name=$1 out
  shift
  echo "+ $*" >&2
  echo "$name	$*" >>"$work/commands"
  if out=$("$@" 2>"$work/$name.log" | tail -n 1) && [ -n "$out" ]; then
    echo "{\"name\": \"$name\", \"r\": $out}" >>"$results"
  else
    echo "xvec_gpu.sh: $name failed: $(tail -n 3 "$work/$name.log" | tr '\n' ' ')" >&2
    echo "{\"name\": \"$name\", \"r\": null}" >>"$results"
  fi
}

X=("$bench/xvec_gpu_bench" --steps "$STEPS" --speakers "$SPEAKERS" --autotune)
record xvec_fp32_eps0 "${X[@]}" --precision fp32 --eps 0
record xvec_fp32 "${X[@]}" --precision fp32 --eps 0.1
record xvec_tf32 "${X[@]}" --precision tf32 --eps 0.1
record xvec_bf16_eps0 "${X[@]}" --precision bf16 --eps 0
record xvec_bf16 "${X[@]}" --precision bf16 --eps 0.1

if $py -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  P=($py tests/bench/xvec_torch_gpu.py --steps "$STEPS" --speakers "$SPEAKERS" --eps 0.1)
  record torch_eager_none "${P[@]}" --noise none
  record torch_eager_cpu "${P[@]}" --noise cpu
  record torch_eager_gpu "${P[@]}" --noise gpu
  record torch_eager_tf32 "${P[@]}" --noise gpu --tf32
  record torch_eager_amp "${P[@]}" --noise gpu --amp
  record torch_compile "${P[@]}" --noise gpu --compile
  record torch_compile_tf32 "${P[@]}" --noise gpu --compile --tf32
  record torch_compile_amp "${P[@]}" --noise gpu --compile --amp
else
  echo "xvec_gpu.sh: PyTorch with CUDA is not installed for $py: PyTorch rows are n/a" >&2
fi

# the feed: feederd serving a packed speech dataset
if [ -x "$build/daemon/feederd" ] && [ -x "$build/tools/packer" ]; then
  "$build/tools/gen-speech" 40 30 "$work/speech" --seed 1 >"$work/gen.log" 2>&1 &&
    "$build/tools/packer" pack audio "$work/speech" "$work/datasets/speech" --features mfcc \
      --ceps 30 >"$work/pack.log" 2>&1
  "$build/daemon/feederd" --config /dev/null --socket "$work/s.sock" --datasets "$work/datasets" \
    --log-level warning 2>"$work/feederd.log" &
  daemon=$!
  for _ in $(seq 100); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
  record feed "$bench/xvec_feed_bench" --dataset speech --socket "$work/s.sock" --batch 128 \
    --chunk 200 --steps 200 --precision bf16 --eps 0.1
  record feed_fp32 "$bench/xvec_feed_bench" --dataset speech --socket "$work/s.sock" --batch 128 \
    --chunk 200 --steps 200 --precision fp32 --eps 0.1
else
  echo "xvec_gpu.sh: feederd or packer not built: feed row is n/a" >&2
fi

# H2D bandwidth (its last line is key=value, turned into JSON here)
echo "+ $bench/h2d_bench" >&2
echo "h2d	$bench/h2d_bench" >>"$work/commands"
if h2d=$("$bench/h2d_bench" 2>"$work/h2d.log" | tail -n 1); then
  echo "{\"name\": \"h2d\", \"r\": {$(echo "$h2d" | sed -E 's/([a-z_]+)=([0-9.]+)/"\1": \2,/g; s/,$//')}}" >>"$results"
fi

$py - "$results" "$gpu" "$work/commands" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    rows[d["name"]] = d["r"]
gpu = sys.argv[2]

def sps(name):
    r = rows.get(name)
    return r.get("samples_per_s") if r else None

def fmt(v, unit=""):
    return "n/a" if v is None else f"{v:,.0f}{unit}"

def overhead(a, b):  # step-time overhead of b over a, from samples/s
    sa, sb = sps(a), sps(b)
    return None if not sa or not sb else 100.0 * (sa / sb - 1.0)

def pct(v):
    return "n/a" if v is None else f"{v:+.2f} %"

print(f"### x-vector TDNN on {gpu} (batch 128, chunk 200, 30-dim, 512/1500/512)\n")
print("| measure | value | goal | met |")
print("|---|---|---|---|")
for prec in ("fp32", "bf16"):
    o = overhead(f"xvec_{prec}_eps0", f"xvec_{prec}")
    met = "n/a" if o is None else ("yes" if o <= 2 else "NO")
    print(f"| noise cost, xvec {prec} (EPS 0.1 vs 0) | {pct(o)} | <= 2 % | {met} |")
for mode in ("cpu", "gpu"):
    o = overhead("torch_eager_none", f"torch_eager_{mode}")
    what = "torch.randn(...).to(device)" if mode == "cpu" else "torch.randn_like"
    print(f"| noise cost, PyTorch eager fp32, {what} | {pct(o)} | (contrast) | |")
best = {"fp32": max([s for s in (sps("torch_eager_gpu"), sps("torch_compile")) if s] or [0]) or None,
        "tf32": max([s for s in (sps("torch_eager_tf32"), sps("torch_compile_tf32")) if s] or [0]) or None,
        "bf16": max([s for s in (sps("torch_eager_amp"), sps("torch_compile_amp")) if s] or [0]) or None}
for prec in ("fp32", "tf32", "bf16"):
    x = sps(f"xvec_{prec}")
    b = best[prec]
    ratio = None if not x or not b else x / b
    met = "n/a" if ratio is None else "%.2f x %s" % (ratio, "yes" if ratio >= 1.2 else "NO")
    print(f"| throughput, xvec {prec} | {fmt(x, ' samples/s')} | >= 1.2 x best PyTorch "
          f"({fmt(b)}) | {met} |")
# issue 18.5: bf16 keeps rounded weight copies and splices into bfloat16, so
# it must beat tf32 (it used to round both operands of every GEMM)
xb, xt = sps("xvec_bf16"), sps("xvec_tf32")
r = None if not xb or not xt else xb / xt
print(f"| xvec bf16 / xvec tf32 | {'n/a' if r is None else '%.2f x' % r} | > 1.0 x | "
      f"{'n/a' if r is None else ('yes' if r > 1.0 else 'NO')} |")
for name, label in (("torch_eager_gpu", "PyTorch eager fp32"), ("torch_eager_tf32", "PyTorch eager tf32"),
                    ("torch_eager_amp", "PyTorch eager bf16 autocast"),
                    ("torch_compile", "torch.compile fp32"), ("torch_compile_tf32", "torch.compile tf32"),
                    ("torch_compile_amp", "torch.compile bf16 autocast")):
    print(f"| throughput, {label} | {fmt(sps(name), ' samples/s')} | | |")
for name in ("feed", "feed_fp32"):
    r = rows.get(name)
    if r:
        w = 100.0 * r["gpu_wait_fraction"]
        val = "%.2f %% (%s samples/s)" % (w, fmt(r["samples_per_s"]))
        met = "yes" if w < 2 else "NO"
        prec = r["precision"]
    else:
        val, met, prec = "n/a", "n/a", ""
    print(f"| feed: GPU waiting for data, feederd -> xvec {prec} | {val} | < 2 % | {met} |")
h = rows.get("h2d")
if h:
    val = "%.1f %% (%.1f vs %.1f GB/s)" % (100.0 * h["ratio"], h["ring_gbs"], h["hostalloc_gbs"])
    met = "yes" if h["ratio"] >= 0.9 else "NO"
else:
    val, met = "n/a", "n/a"
print(f"| H2D from registered ring vs cudaHostAlloc | {val} | >= 90 % | {met} |")
print("\nCommands:\n")
for line in open(sys.argv[3]):
    name, cmd = line.rstrip("\n").split("\t", 1)
    print(f"    {name}: {cmd}")
PY
