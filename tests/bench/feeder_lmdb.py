"""feeder_lmdb.py — read a Feeder dataset (LMDB, see proto/dsformat.h) from
Python with python3-lmdb, for the PyTorch side of the benchmarks.

The benchmarks compare Feeder against what people run today: a PyTorch
DataLoader whose Dataset reads JPEG bytes (or feature matrices) out of an
LMDB file. This reads the very same dataset packer wrote, so both sides see
identical bytes."""
import struct

import lmdb
import numpy as np

SAMPLE_HDR = struct.Struct("<IIIIIB")  # label, payload_len, crc, frames, dim, dtype
# bytes before the payload: version 1 records end the header there (24),
# version 2 adds flags, aux and a CRC of the header (32); version 3 keeps
# that record header (flags say whether a JPEG is tiled by restart intervals,
# which changes nothing for a reader of its bytes)
HDR_BYTES = {1: 24, 2: 32, 3: 32}
HEADER = struct.Struct("<8sIIQIII")       # magic, version, kind, samples, classes, dim, dtype


class FeederLMDB:
    """Random access to the samples of one dataset; safe to reopen per worker."""

    def __init__(self, path):
        self.path = path
        self.env = None
        env = self._open()
        with env.begin() as txn:
            raw = txn.get(b"header", db=self.meta)
            magic, version, kind, samples, classes, dim, dtype = HEADER.unpack_from(raw)
            if magic != b"FEEDERDS":
                raise ValueError(f"{path}: not a Feeder dataset")
            if version not in HDR_BYTES:
                raise ValueError(f"{path}: dataset format version {version} is not known here")
        self.hdr_bytes = HDR_BYTES[version]
        self.kind, self.samples, self.classes, self.dim, self.dtype = kind, samples, classes, dim, dtype
        env.close()
        self.env = None

    def _open(self):
        env = lmdb.open(self.path, readonly=True, lock=False, readahead=False, max_dbs=8)
        self.meta = env.open_db(b"meta", create=False)
        self.samples_db = env.open_db(b"samples", create=False)
        self.env = env
        return env

    def __len__(self):
        return self.samples

    def get(self, index):
        """(label, payload bytes, frames, dim, dtype) of sample index."""
        if self.env is None:  # opened lazily so forked DataLoader workers get their own
            self._open()
        with self.env.begin(buffers=False) as txn:
            v = txn.get(struct.pack(">Q", index), db=self.samples_db)
        label, plen, _crc, frames, dim, dtype = SAMPLE_HDR.unpack_from(v)
        return label, v[self.hdr_bytes:self.hdr_bytes + plen], frames, dim, dtype

    def labels(self):
        """{label id: class name} (the "labels" database)."""
        if self.env is None:
            self._open()
        db = self.env.open_db(b"labels", create=False)
        with self.env.begin() as txn:
            return {struct.unpack(">I", k)[0]: v.decode() for k, v in txn.cursor(db)}

    def features(self, index):
        label, payload, frames, dim, dtype = self.get(index)
        arr = np.frombuffer(payload, dtype=np.float16 if dtype == 1 else np.float32)
        return label, arr.reshape(frames, dim)
