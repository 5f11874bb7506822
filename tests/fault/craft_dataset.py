#!/usr/bin/python3
"""craft_dataset.py — damage one record of a packed dataset the way a
hostile or unlucky file would, by byte surgery on data.mdb (LMDB's on-disk
layout), for the fault tests.

usage: craft_dataset.py DATA_MDB INDEX overlong|badpage
       craft_dataset.py DATA_MDB INDEX flags FLAGS AUX

  overlong  the record's LMDB value length and its payload length say
            0x7FFFFF00 bytes (the header CRC recomputed so that only the
            length is wrong): its bytes would run far past the file and
            LMDB's mapping
  badpage   the record's overflow page number points past the file's last
            page: LMDB answers MDB_PAGE_NOTFOUND, after which an unrenewed
            read transaction fails for every later record
  flags     the record header's flags and aux fields become FLAGS and
            AUX (numbers, 0x... allowed), the header CRC recomputed: a
            well-formed record that says something untrue about its JPEG

The record must be stored on overflow pages (larger than about half a
page). Exit 0, or 1 with a reason."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from crc32c import crc32c  # noqa: E402

F_BIGDATA = 0x01
PAGE_HDR = 16
HDR = 32  # record header of dataset format version 2


path, index, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = bytearray(open(path, "rb").read())
# The meta page: magic, version, address, mapsize, then the free DB whose
# md_pad holds the page size.
psize = struct.unpack_from("<I", data, PAGE_HDR + 24)[0]
if psize not in (4096, 8192, 16384, 65536):
    psize = 4096
# A leaf node of the samples database: lo, hi (data size), flags, ksize, key.
node = struct.pack("<HH", F_BIGDATA, 8) + struct.pack(">Q", index)
at = data.find(node)
if at < 4 or data.find(node, at + 1) >= 0:
    sys.exit("record %d is not on overflow pages exactly once" % index)
start = at - 4
dsize = struct.unpack_from("<I", data, start)[0]
pgno = struct.unpack_from("<Q", data, at + len(node))[0]
rec = pgno * psize + PAGE_HDR  # the record's header, at the start of its first page
if mode == "overlong":
    big = 0x7FFFFF00
    struct.pack_into("<I", data, start, big)
    struct.pack_into("<I", data, rec + 4, big - HDR)
elif mode == "flags" and len(sys.argv) == 6:
    struct.pack_into("<HI", data, rec + 22, int(sys.argv[4], 0), int(sys.argv[5], 0))
elif mode == "badpage":
    struct.pack_into("<Q", data, at + len(node), len(data) // psize + 1000)
else:
    sys.exit("unknown mode " + mode)
if mode != "badpage":  # only what was changed is wrong: the header's CRC is right
    struct.pack_into("<I", data, rec + 28, crc32c(bytes(data[rec:rec + 28])))
open(path, "r+b").write(data)
print("record %d: %s (was %d bytes on page %d)" % (index, mode, dsize, pgno))
