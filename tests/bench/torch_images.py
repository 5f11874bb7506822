"""torch_images.py — the PyTorch DataLoader peer of feeder-bench.

RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize
(ImageNet) + .half(), batch B, num_workers = cores, reading the JPEG bytes of
the same Feeder dataset through python3-lmdb and decoding with PIL — the
recipe a PyTorch ImageNet script uses. Prints one JSON object:
{"images_per_s", "batches", "seconds", "workers"}."""
import argparse
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
from torchvision import transforms  # noqa: E402

from feeder_lmdb import FeederLMDB  # noqa: E402


class LMDBImages(Dataset):
    def __init__(self, path, size):
        self.db = FeederLMDB(path)
        self.tf = transforms.Compose([
            transforms.RandomResizedCrop(size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ])

    def __len__(self):
        return len(self.db)

    def __getitem__(self, i):
        label, payload, _, _, _ = self.db.get(i)
        img = Image.open(io.BytesIO(payload)).convert("RGB")
        return self.tf(img).half(), label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    for k, v in dict(batch=256, size=224, batches=20, workers=os.cpu_count()).items():
        ap.add_argument("--" + k, type=int, default=v)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ds = LMDBImages(a.dataset, a.size)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                    drop_last=True, persistent_workers=False, prefetch_factor=2)
    it = iter(dl)
    next(it)  # start-up (worker fork, first batch) is not counted
    n = 0
    t0 = time.perf_counter()
    for x, y in it:
        assert x.shape == (a.batch, 3, a.size, a.size) and x.dtype == torch.float16
        n += 1
        if n >= a.batches:
            break
    dt = time.perf_counter() - t0
    print(json.dumps({"images_per_s": n * a.batch / dt, "batches": n, "seconds": dt,
                      "workers": a.workers}))


if __name__ == "__main__":
    main()
