"""xvec_torch_gpu.py — the PyTorch peer of the GPU x-vector trainer, for xvec_gpu.sh.

The model of xvec_torch.py (x-vector TDNN as Conv1d + ReLU + BatchNorm1d +
Dropout, mean+std pooling, two segment layers, softmax CE, AdamW) trained on
synthetic batches already on the GPU, so only the training step is timed, as
xvec_gpu_bench does for Feeder's trainer. Options choose how the training
noise is made:
  --noise none   no noise (eps = 0)
  --noise cpu    torch.randn(x.size()).to(device) * eps  (made on the CPU, copied)
  --noise gpu    torch.randn_like(x) * eps               (made on the GPU)
and --compile (torch.compile) and --amp (bf16 autocast, fp32 master weights).
Prints one JSON object with samples_per_s."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from xvec_torch import XVector  # noqa: E402  (one definition of the peer model)



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--feat", type=int, default=30)
    ap.add_argument("--speakers", type=int, default=1000)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--pool-width", type=int, default=1500)
    ap.add_argument("--embed", type=int, default=512)
    ap.add_argument("--eps", type=float, default=0.1)
    ap.add_argument("--noise", choices=["none", "cpu", "gpu"], default="gpu")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    eps = 0.0 if a.noise == "none" else a.eps
    model = XVector(a.feat, a.speakers, a.width, a.pool_width, a.embed, eps,
                    noise=a.noise).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    step_model = torch.compile(model) if a.compile else model
    xs = [torch.randn(a.batch, a.feat, a.chunk, device=dev) for _ in range(4)]
    ys = [torch.randint(0, a.speakers, (a.batch,), device=dev) for _ in range(4)]
    model.train()

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
            loss = torch.nn.functional.cross_entropy(step_model(xs[i % 4]), ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.steps):
        loss = step(i)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(json.dumps({"samples_per_s": a.steps * a.batch / dt, "ms_per_step": 1e3 * dt / a.steps,
                      "noise": a.noise, "compile": a.compile, "amp": a.amp,
                      "loss": float(loss), "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
