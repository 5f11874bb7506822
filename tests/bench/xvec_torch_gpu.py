"""xvec_torch_gpu.py — the PyTorch peer of the GPU x-vector trainer, for xvec_gpu.sh.

The model of xvec_torch.py (x-vector TDNN as Conv1d + ReLU + BatchNorm1d +
Dropout, mean+std pooling, two segment layers, softmax CE, AdamW) trained on
synthetic batches already on the GPU, so only the training step is timed, as
xvec_gpu_bench does for Feeder's trainer.

--configs names the runs, all in this one process (one interpreter and CUDA
start-up for all of them), each on its own model from the same seed:
  fp32        fp32, noise torch.randn_like(x) * eps (made on the GPU)
  tf32        the same with TF32 matmuls and convolutions
  amp         bf16 autocast, fp32 master weights
  fp32-none   fp32 without noise (eps = 0)
  fp32-cpu    fp32, noise torch.randn(x.size()).to(device) * eps (made on the
              CPU and copied)
  compile-fp32, compile-tf32, compile-amp: the same under torch.compile
After each config's warm-up the timed steps run in --blocks blocks, the
configs taking turns block by block so that a drift of the clocks falls on
all of them alike. Prints one JSON object per config: samples_per_s,
ms_per_step and its spread over the blocks."""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from xvec_torch import XVector  # noqa: E402  (one definition of the peer model)

# name -> (tf32, amp, noise, compile)
CONFIGS = {
    "fp32": (False, False, "gpu", False),
    "tf32": (True, False, "gpu", False),
    "amp": (False, True, "gpu", False),
    "fp32-none": (False, False, "none", False),
    "fp32-cpu": (False, False, "cpu", False),
    "compile-fp32": (False, False, "gpu", True),
    "compile-tf32": (True, False, "gpu", True),
    "compile-amp": (False, True, "gpu", True),
}


def has_attr(obj, name):
    try:  # older torch.backends raise AssertionError for unknown names
        getattr(obj, name)
        return True
    except Exception:
        return False


def set_tf32(on):
    # PyTorch 2.9 replaced allow_tf32 with fp32_precision (and warns on the
    # old flags, or refuses a mix of the two): the new one where it exists.
    mode = "tf32" if on else "ieee"
    if has_attr(torch.backends.cuda.matmul, "fp32_precision"):
        torch.backends.cuda.matmul.fp32_precision = mode
    else:
        torch.backends.cuda.matmul.allow_tf32 = on
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and has_attr(conv, "fp32_precision"):
        conv.fp32_precision = mode
    else:
        torch.backends.cudnn.allow_tf32 = on


class Run:
    """One config: its model, optimizer, batches and timings."""

    def __init__(self, name, a, dev):
        self.name = name
        self.tf32, self.amp, self.noise, compiled = CONFIGS[name]
        torch.manual_seed(0)
        eps = 0.0 if self.noise == "none" else a.eps
        self.model = XVector(a.feat, a.speakers, a.width, a.pool_width, a.embed, eps,
                             noise=self.noise).to(dev)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=1e-4)
        self.fwd = torch.compile(self.model) if compiled else self.model
        self.xs = [torch.randn(a.batch, a.feat, a.chunk, device=dev) for _ in range(4)]
        self.ys = [torch.randint(0, a.speakers, (a.batch,), device=dev) for _ in range(4)]
        self.i = 0
        self.block_s = []
        self.loss = None

    def steps(self, n):
        set_tf32(self.tf32)
        for _ in range(n):
            k = self.i % 4
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.amp):
                loss = torch.nn.functional.cross_entropy(self.fwd(self.xs[k]), self.ys[k])
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            self.i += 1
        self.loss = loss

    def timed(self, n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        self.steps(n)
        torch.cuda.synchronize()
        self.block_s.append(time.perf_counter() - t0)

    def report(self, a, block_steps):
        ms = [1e3 * s / block_steps for s in self.block_s]
        total = sum(self.block_s)
        return {"config": self.name, "samples_per_s": a.batch * block_steps * len(ms) / total,
                "ms_per_step": statistics.mean(ms),
                "ms_per_step_sd": statistics.stdev(ms) if len(ms) > 1 else 0.0,
                "steps": block_steps * len(ms), "noise": self.noise, "amp": self.amp,
                "tf32": self.tf32, "compile": CONFIGS[self.name][3],
                "loss": float(self.loss), "torch": torch.__version__,
                "device": torch.cuda.get_device_name(0)}


def main():
    ap = argparse.ArgumentParser()
    for k, v in dict(batch=128, chunk=200, feat=30, speakers=1000, width=512, pool_width=1500,
                     embed=512, eps=0.1, blocks=6, warmup=15).items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    ap.add_argument("--configs", default="fp32,tf32,amp",
                    help="comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("--steps", type=int, default=300, help="timed steps per config")
    a = ap.parse_args()
    names = a.configs.split(",")
    bad = [n for n in names if n not in CONFIGS]
    if bad:
        ap.error(f"unknown config {', '.join(bad)} (known: {', '.join(CONFIGS)})")
    if not torch.cuda.is_available():
        print("xvec_torch_gpu.py: torch.cuda.is_available() is false", file=sys.stderr)
        return 77
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    runs = [Run(n, a, dev) for n in names]
    for r in runs:
        r.steps(a.warmup)
        print(f"{r.name}: warmed up", file=sys.stderr, flush=True)
    block_steps = max(1, -(-a.steps // a.blocks))
    for _ in range(a.blocks):
        for r in runs:
            r.timed(block_steps)
    for r in runs:
        print(json.dumps(r.report(a, block_steps)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
