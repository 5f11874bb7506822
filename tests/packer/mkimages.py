#!/usr/bin/python3
"""mkimages.py — small noise JPEGs in ImageFolder layout for the packer tests.

usage: mkimages.py N DIR [--classes K] [--seed S] [--min-side A] [--max-side B] [--smooth]

Image i goes to DIR/class_<i % K>/img_<i>.jpg; sizes and pixels come from the
seed, so a run is reproducible. Used when tools/gen/gen-images is not built (and
by tests that need particular sizes); pure noise keeps every file distinct,
which the corruption test relies on. --smooth paints gradients and waves with
little noise instead, for comparing resized pixels with a reference."""
import argparse
import os

import numpy as np
from PIL import Image

ap = argparse.ArgumentParser()
ap.add_argument("n", type=int)
ap.add_argument("dir")
ap.add_argument("--classes", type=int, default=4)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--min-side", type=int, default=24)
ap.add_argument("--max-side", type=int, default=64)
ap.add_argument("--smooth", action="store_true")
a = ap.parse_args()
rng = np.random.default_rng(a.seed)
for i in range(a.n):
    d = os.path.join(a.dir, "class_%03d" % (i % a.classes))
    os.makedirs(d, exist_ok=True)
    h = int(rng.integers(a.min_side, a.max_side + 1))
    w = int(rng.integers(a.min_side, a.max_side + 1))
    # Smooth base plus noise: compresses like a photo, unique per image.
    base = rng.integers(0, 256, (1, 1, 3)).astype(np.int16)
    if a.smooth:
        y, x = np.mgrid[0:h, 0:w]
        f = rng.uniform(0.01, 0.05, 3)
        waves = np.stack([60 * np.sin(f[c] * x + 2 * f[(c + 1) % 3] * y) for c in range(3)], -1)
        grad = (100 * x / w)[..., None] - 50
        px = base + waves + grad + rng.integers(-4, 5, (h, w, 3))
    else:
        px = base + rng.integers(-60, 61, (h, w, 3))
    px = np.clip(px, 0, 255).astype(np.uint8)
    mode = "L" if i % 7 == 3 else "RGB"
    img = Image.fromarray(px).convert(mode)
    img.save(os.path.join(d, "img_%06d.jpg" % i), quality=int(rng.integers(80, 96)))
