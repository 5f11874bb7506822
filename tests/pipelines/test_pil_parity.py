#!/usr/bin/env python3
"""test_pil_parity.py — the jpeg pipeline against PIL, i.e. against what
torchvision's RandomResizedCrop / Resize + CenterCrop + RandomHorizontalFlip
compute on PIL images (PIL decodes with libjpeg-turbo too and resizes with
the same antialiased triangle filter for BILINEAR).

For photo-like JPEGs written by PIL, the crop box the pipeline reports
(jpeg_pipeline_dump) is applied with PIL: train = crop(box).resize(size,
BILINEAR) [+ mirror], eval = resize(shorter side 256/224 * size, BILINEAR)
+ centre crop. The reference path must match PIL within a mean absolute
difference of 1/255 (PIL rounds to 8 bits between its two passes), the fast
path within 2/255. Exit 0 pass, 1 fail, 77 skip (no PIL or numpy).

usage: test_pil_parity.py PATH/TO/jpeg_pipeline_dump
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image
except ImportError as e:
    print(f"SKIP: {e}", file=sys.stderr)
    sys.exit(77)


def synth(w, h, seed):
    """Smooth gradients, a soft disk and fine texture, like jpeg_synth.h."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    d = np.hypot(x - w * 0.4, y - h * 0.55)
    disk = 1 / (1 + np.exp((d - min(w, h) * 0.25) / 3))
    stripe = 0.5 + 0.5 * np.sin(x * 0.21 + y * 0.07 + seed)
    rng = np.random.default_rng(seed)
    noise = rng.uniform(-3, 3, (h, w))
    rgb = np.stack([60 + 120 * u + 50 * disk + 20 * stripe + noise,
                    40 + 100 * v + 70 * np.sin(3.1 * u + 1.3 * v) * (1 - disk) + 25 * stripe + noise,
                    90 + 80 * (1 - u) * v + 90 * disk * stripe + noise], axis=-1)
    return Image.fromarray(np.clip(rgb + 0.5, 0, 255).astype(np.uint8), "RGB")


def pil_eval(img, size, ratio=256 / 224):
    w, h = img.size
    target = round(size * ratio)
    if w <= h:
        nw, nh = target, int(target * h / w)
    else:
        nw, nh = int(target * w / h), target
    r = img.resize((nw, nh), Image.BILINEAR)
    top, left = int(round((nh - size) / 2.0)), int(round((nw - size) / 2.0))
    return r.crop((left, top, left + size, top + size))


def main():
    dump = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for (w, h, seed) in [(500, 375, 1), (333, 500, 2), (1024, 683, 3)]:
            path = os.path.join(tmp, f"img{seed}.jpg")
            synth(w, h, seed).save(path, quality=90)
            img = Image.open(path).convert("RGB")
            img.load()
            cases = [("eval", 224, 0)] + [("train", 224, k) for k in range(8)] + \
                    [("eval", 64, 0)] + [("train", 64, k) for k in range(4)]
            for mode, size, key in cases:
                out = os.path.join(tmp, "out.raw")
                res = subprocess.run([dump, path, mode, str(size), str(key), out],
                                     capture_output=True, text=True)
                if res.returncode != 0:
                    print(f"{dump} failed: {res.stderr}", file=sys.stderr)
                    return 1
                bx, by, bw, bh, flip = res.stdout.split()
                if mode == "train":
                    x, y, cw, ch = (int(float(t)) for t in (bx, by, bw, bh))
                    want = img.crop((x, y, x + cw, y + ch)).resize((size, size), Image.BILINEAR)
                    if flip == "1":
                        want = want.transpose(Image.FLIP_LEFT_RIGHT)
                else:
                    want = pil_eval(img, size)
                want = np.asarray(want, dtype=np.float64)
                fast = np.fromfile(out, dtype=np.uint8).reshape(size, size, 3).astype(np.float64)
                ref = np.fromfile(out + ".ref", dtype=np.uint8).reshape(size, size, 3).astype(np.float64)
                mad_ref = np.abs(ref - want).mean() / 255
                mad_fast = np.abs(fast - want).mean() / 255
                ok = mad_ref <= 1 / 255 and mad_fast <= 2 / 255
                if not ok:
                    failures += 1
                print(f"{w}x{h} {mode} {size} key {key}: MAD reference {mad_ref * 255:.3f}/255, "
                      f"fast {mad_fast * 255:.3f}/255 {'ok' if ok else 'FAIL'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
