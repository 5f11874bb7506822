#!/usr/bin/python3
"""folder2lmdb.py — the Python recipe people use today to pack an ImageFolder
tree into LMDB, rewritten after Efficient-PyTorch's folder2lmdb, as the
baseline of tests/bench/pack.sh.

usage: folder2lmdb.py SRC DEST.lmdb [--write-frequency 5000]

Like the original: walk SRC the way torchvision's ImageFolder does (classes
= sorted sub-folders, files sorted within each), read each file's raw bytes,
pickle (bytes, label) per sample, put it under key u'{}'.format(idx) in one
LMDB file (subdir=False, 1 TiB map, meminit=False, map_async=True),
commit every 5000 samples, then store __keys__ and __len__. The original
reads through a torch DataLoader; this reads in the main process, which is
what that loop amounts to with num_workers=0 and needs no torch."""
import argparse
import os
import pickle

import lmdb

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dest")
ap.add_argument("--write-frequency", type=int, default=5000)
a = ap.parse_args()

classes = sorted(e.name for e in os.scandir(a.src) if e.is_dir())
samples = []
for label, c in enumerate(classes):
    for root, _, files in sorted(os.walk(os.path.join(a.src, c), followlinks=True)):
        for f in sorted(files):
            samples.append((os.path.join(root, f), label))

db = lmdb.open(a.dest, subdir=os.path.isdir(a.dest), map_size=1099511627776,
               readonly=False, meminit=False, map_async=True)
txn = db.begin(write=True)
for idx, (path, label) in enumerate(samples):
    with open(path, "rb") as f:
        raw = f.read()
    txn.put(u"{}".format(idx).encode("ascii"), pickle.dumps((raw, label)))
    if idx % a.write_frequency == 0:
        txn.commit()
        txn = db.begin(write=True)
txn.commit()
keys = [u"{}".format(k).encode("ascii") for k in range(len(samples))]
with db.begin(write=True) as txn:
    txn.put(b"__keys__", pickle.dumps(keys))
    txn.put(b"__len__", pickle.dumps(len(keys)))
db.sync()
db.close()
