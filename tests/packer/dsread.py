#!/usr/bin/python3
"""dsread.py — an independent reader of a Feeder dataset for the packer tests.

usage: dsread.py DEST

Reads the LMDB environment with python3-lmdb (not with Feeder's C code, so
the tests check the on-disk format itself) and prints one JSON object:
{"header": {...}, "labels": [...], "samples": [{"index", "label", "len",
"crc", "frames", "dim", "dtype", "flags", "aux", "name"}, ...]}; version 3
headers add "source_bytes" and "tiled". Layout per proto/dsformat.h."""
import json
import struct
import sys

import lmdb

env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=8, subdir=True)
out = {"labels": [], "samples": []}
with env.begin() as txn:
    meta = env.open_db(b"meta", txn=txn, create=False)
    labels = env.open_db(b"labels", txn=txn, create=False)
    samples = env.open_db(b"samples", txn=txn, create=False)
    names = env.open_db(b"names", txn=txn, create=False)
    h = txn.get(b"header", db=meta)
    assert h[:8] == b"FEEDERDS", "bad magic"
    version, kind, nsamples, classes, feat_dim, dtype = struct.unpack_from("<IIQIII", h, 8)
    out["header"] = {"version": version, "kind": kind, "samples": nsamples,
                     "classes": classes, "feat_dim": feat_dim, "dtype": dtype,
                     "packer_version": h[40:72].split(b"\0")[0].decode(),
                     "options": h[72:328].split(b"\0")[0].decode()}
    assert len(h) == (344 if version >= 3 else 328), "header size"
    if version >= 3:
        out["header"]["source_bytes"], out["header"]["tiled"] = struct.unpack_from("<QQ", h, 328)
    for k, v in txn.cursor(db=labels):
        assert len(k) == 4 and struct.unpack(">I", k)[0] == len(out["labels"]), "label keys"
        out["labels"].append(v.decode())
    for k, v in txn.cursor(db=samples):
        idx = struct.unpack(">Q", k)[0]
        label, plen, crc, frames, dim, dt = struct.unpack_from("<IIIIIB", v, 0)
        hdr = 24 if version == 1 else 32  # version 2 adds flags, aux, a header CRC
        assert plen == len(v) - hdr, "payload length"
        flags, aux = struct.unpack_from("<HI", v, 22) if version >= 2 else (0, 0)
        name = txn.get(k, db=names)
        out["samples"].append({"index": idx, "label": label, "len": plen, "crc": crc,
                               "frames": frames, "dim": dim, "dtype": dt,
                               "flags": flags, "aux": aux,
                               "name": name.decode() if name is not None else None})
json.dump(out, sys.stdout)
print()
