"""xvec_torch.py — the PyTorch peer of `xvec train --device cpu`.

The same x-vector TDNN (Snyder et al. 2018) and layer table as
xvec/: five frame layers (contexts [-2..2], {-2,0,2}, {-3,0,3},
{0}, {0} as Conv1d with kernel 5/3/3/1/1 and dilation 1/2/3/1/1), each
dropout(bn(relu(tdnn(x)))), Gaussian noise eps on the last frame output in
training, mean+std pooling, two segment layers relu+bn, softmax CE, AdamW.
Its DataLoader reads the same features dataset through python3-lmdb and cuts
random chunks, as a PyTorch recipe would. Prints one JSON object with
samples_per_s (training steps only; start-up excluded)."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Chunks(Dataset):
    def __init__(self, path, chunk):
        from feeder_lmdb import FeederLMDB  # python3-lmdb only where a dataset is read
        self.db = FeederLMDB(path)
        self.chunk = chunk

    def __len__(self):
        return len(self.db)

    def __getitem__(self, i):
        label, m = self.db.features(i)
        m = m.astype(np.float32)
        t = m.shape[0]
        if t < self.chunk:
            m = np.tile(m, (self.chunk // t + 1, 1))
            t = m.shape[0]
        s = np.random.randint(0, t - self.chunk + 1)
        c = m[s:s + self.chunk]
        c = c - c.mean(axis=0, keepdims=True)
        return torch.from_numpy(np.ascontiguousarray(c.T)), label


class XVector(nn.Module):
    """noise: "gpu" = torch.randn_like (made where x is), "cpu" =
    torch.randn(x.size()).to(x.device) (made on the CPU and copied)."""

    def __init__(self, feat_dim, classes, width, pool_width, embed, eps, dropout=0.0,
                 noise="gpu"):
        super().__init__()
        spec = [(feat_dim, width, 5, 1), (width, width, 3, 2), (width, width, 3, 3),
                (width, width, 1, 1), (width, pool_width, 1, 1)]
        self.frames = nn.ModuleList()
        for i, o, k, d in spec:
            self.frames.append(nn.Sequential(nn.Conv1d(i, o, k, dilation=d), nn.ReLU(),
                                             nn.BatchNorm1d(o), nn.Dropout(dropout)))
        self.eps, self.noise = eps, noise
        self.seg6 = nn.Linear(2 * pool_width, embed)
        self.bn6 = nn.BatchNorm1d(embed)
        self.seg7 = nn.Linear(embed, embed)
        self.bn7 = nn.BatchNorm1d(embed)
        self.out = nn.Linear(embed, classes)

    def forward(self, x):
        for f in self.frames:
            x = f(x)
        if self.training and self.eps > 0:
            z = torch.randn(x.size()).to(x.device) if self.noise == "cpu" else torch.randn_like(x)
            x = x + z * self.eps
        mean = x.mean(dim=2)
        std = torch.sqrt(x.float().var(dim=2, unbiased=False) + 1e-5)  # fp32 under autocast
        h = torch.cat([mean.float(), std], dim=1)
        h = self.bn6(torch.relu(self.seg6(h)))
        h = self.bn7(torch.relu(self.seg7(h)))
        return self.out(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    for k, v in dict(batch=64, chunk=200, steps=20, width=512, pool_width=1500, embed=512,
                     noise_eps=0.1, threads=os.cpu_count() or 1, workers=1).items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    ds = Chunks(a.dataset, a.chunk)
    model = XVector(ds.db.dim, ds.db.classes, a.width, a.pool_width, a.embed, a.noise_eps)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers, drop_last=True)
    model.train()
    steps, t0 = 0, None
    while steps < a.steps + 2:
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            if steps == 2:  # warm-up steps are not counted
                t0 = time.perf_counter()
            if steps >= a.steps + 2:
                break
    dt = time.perf_counter() - t0
    print(json.dumps({"samples_per_s": a.steps * a.batch / dt, "steps": a.steps,
                      "seconds": dt, "threads": a.threads, "loss": float(loss)}))


if __name__ == "__main__":
    main()
