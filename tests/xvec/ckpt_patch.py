#!/usr/bin/env python3
"""ckpt_patch.py — a copy of an xvec checkpoint with fields changed and its
CRC-32C made right again, as a tool that edits the file would leave it: the
damaged checkpoints that only xvec's field checks can refuse.

usage: ckpt_patch.py IN OUT EDIT...
EDIT:  header+OFFSET:u32=V | header+OFFSET:u64=V   (header bytes)
       blob+OFFSET:u32=V   | blob+OFFSET:u64=V     (the position blob)
       params[I]=F | m[I]=F | v[I]=F | bn[I]=F     (float32: 1.5, nan, inf, -inf)
The layout is xvec_checkpoint.h's: an 80-byte header (parameter count at
48, statistics count at 56, blob length at 64), then parameters, Adam's m
and v, running statistics, the blob, and the CRC-32C of all before it."""
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from crc32c import crc32c  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    img = bytearray(open(sys.argv[1], "rb").read())
    n, nb, blob = struct.unpack_from("<QQQ", img, 48)
    sections = {"params": 80, "m": 80 + 4 * n, "v": 80 + 8 * n, "bn": 80 + 12 * n}
    blob_at = 80 + 4 * (3 * n + nb)
    for edit in sys.argv[3:]:
        m = re.fullmatch(r"(header|blob)\+(\d+):(u32|u64)=(\d+)", edit)
        if m:
            base = 0 if m[1] == "header" else blob_at
            struct.pack_into("<I" if m[3] == "u32" else "<Q", img, base + int(m[2]), int(m[4]))
            continue
        m = re.fullmatch(r"(params|m|v|bn)\[(\d+)\]=(\S+)", edit)
        if not m:
            sys.exit(f"ckpt_patch.py: cannot read edit '{edit}'")
        struct.pack_into("<f", img, sections[m[1]] + 4 * int(m[2]), float(m[3]))
    struct.pack_into("<I", img, len(img) - 4, crc32c(bytes(img[:-4])))
    open(sys.argv[2], "wb").write(img)


main()
