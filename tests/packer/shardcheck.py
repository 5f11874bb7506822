#!/usr/bin/python3
"""shardcheck.py — an independent check of a sharded Feeder dataset against
the same sources packed as one data.mdb, for the packer tests.

usage: shardcheck.py [--perm] SINGLE SHARDED [MAXSHARD]

Reads both with python3-lmdb (a shard file with subdir=False), not with
Feeder's C code, and checks the layout proto/manifest.h defines: the
manifest's text form, each shard file's size and CRC-32C, each shard an
ordinary dataset (a header counting its own samples, every label, samples
keyed 0..n-1, names), the whole dataset's header equal to SINGLE's but for
the options, and every record (header and payload) byte for byte SINGLE's
at its global index, with its name. With --perm: the records with their
names are a permutation of SINGLE's (the same multiset, the header's
totals equal) and not in SINGLE's order. With MAXSHARD: no shard holds
more than MAXSHARD record bytes unless it holds a single record. Prints
the shard count."""
import os
import re
import struct
import sys

import lmdb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from crc32c import crc32c  # noqa: E402


def read(path, subdir):
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=8, subdir=subdir)
    with env.begin() as txn:
        dbs = {n: env.open_db(n.encode(), txn=txn, create=False)
               for n in ("meta", "labels", "samples", "names")}
        h = txn.get(b"header", db=dbs["meta"])
        labels = [v for _, v in txn.cursor(db=dbs["labels"])]
        recs = [(struct.unpack(">Q", k)[0], v) for k, v in txn.cursor(db=dbs["samples"])]
        names = {struct.unpack(">Q", k)[0]: v for k, v in txn.cursor(db=dbs["names"])}
    env.close()
    return h, labels, recs, names


def fields(h):
    """The header without its options (bytes 72..327)."""
    return h[:72] + h[328:]


args = sys.argv[1:]
perm = args[0] == "--perm"
if perm:
    args = args[1:]
single, sharded = args[0], args[1]
maxshard = int(args[2]) if len(args) > 2 else None
sh, slabels, srecs, snames = read(single, True)
text = open(os.path.join(sharded, "feeder.manifest"), "rb").read().decode("ascii")
lines = text.split("\n")
assert text.endswith("end\n") and lines[-1] == "" and lines[-2] == "end", "manifest ends"
assert lines[0] == "feeder-manifest 1", lines[0]
m = re.fullmatch(r"header ([0-9a-f]{688})", lines[1])
assert m, "header line"
mh = bytes.fromhex(m.group(1))
assert fields(mh) == fields(sh), "manifest header != the single dataset's"
n = int(re.fullmatch(r"shards ([1-9][0-9]*)", lines[2]).group(1))
assert len(lines) == n + 5, "line count"
files = sorted(f for f in os.listdir(sharded) if f != "feeder.manifest")
assert files == ["shard-%05d.mdb" % i for i in range(n)], files
first = 0
got = []  # --perm: (name, record) at each global index
for i in range(n):
    name, f0, count, size, crc = lines[3 + i].split(" ")[1:]
    f0, count, size = int(f0), int(count), int(size)
    assert name == "shard-%05d.mdb" % i and f0 == first and count >= 1, lines[3 + i]
    path = os.path.join(sharded, name)
    data = open(path, "rb").read()
    assert len(data) == size, (name, "size")
    assert "%08x" % crc32c(data) == crc, (name, "crc")
    h, labels, recs, names = read(path, False)
    assert struct.unpack_from("<Q", h, 16)[0] == count, (name, "header samples")
    assert h[8:16] == sh[8:16] and h[24:72] == sh[24:72], (name, "header fields")
    assert labels == slabels, (name, "labels")
    assert [k for k, _ in recs] == list(range(count)), (name, "keys")
    tiled = 0
    for k, v in recs:
        tiled += struct.unpack_from("<H", v, 22)[0] & 1
        if perm:
            got.append((names[k], v))
            continue
        assert v == srecs[first + k][1], (name, k, "record")
        assert names[k] == snames[first + k], (name, k, "name")
    assert struct.unpack_from("<Q", h, 336)[0] == tiled, (name, "tiled")
    if maxshard is not None and count > 1:
        assert sum(len(v) for _, v in recs) <= maxshard, (name, "over the shard size")
    first += count
assert first == len(srecs) == struct.unpack_from("<Q", sh, 16)[0], "sample count"
if perm:
    want = [(snames[k], v) for k, v in srecs]
    assert sorted(got) == sorted(want), "not a permutation of the single dataset's records"
    assert got != want, "the records are in the single dataset's order"
print(n)
