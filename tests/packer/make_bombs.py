#!/usr/bin/env python3
"""make_bombs.py DIR — write the decoding bombs (decompression bombs) into DIR:

  bomb.jpg    a 1.5 KB JPEG whose header claims 30000 x 30000 pixels (9e8,
              over the 2^27 limit every decoder in Feeder applies);
  zscans.jpg  where jpegtran is there: a progressive JPEG of 601 scans (a
              valid full-precision AC scan repeated, so libjpeg re-decodes
              the coefficients for each without a progression warning),
              over the 500-scan limit (media/jpeg_rules.h).

Prints the names written, one per line. Used by tests/packer/bomb.sh
(packer's checks) and tests/e2e/test_bomb.sh (feederd's)."""
import io
import random
import shutil
import subprocess
import sys

from PIL import Image

out = sys.argv[1]
b = io.BytesIO()
Image.new("RGB", (64, 48), (120, 30, 200)).save(b, "JPEG", quality=90)
data = bytearray(b.getvalue())
at = data.find(b"\xff\xc0")  # SOF0: length(2) precision(1) height(2) width(2)
assert at > 0
data[at + 5:at + 9] = (30000).to_bytes(2, "big") + (30000).to_bytes(2, "big")
assert len(data) < 2000, len(data)
open(f"{out}/bomb.jpg", "wb").write(data)
print("bomb.jpg")

if shutil.which("jpegtran"):
    r = random.Random(1)
    im = Image.new("L", (16, 16))
    im.putdata([r.randrange(256) for _ in range(16 * 16)])
    b = io.BytesIO()
    im.save(b, "JPEG", quality=90)
    # DC, then all AC coefficients at full precision: a scan that may repeat
    # without any progression warning.
    script = f"{out}/zscans.scans"
    open(script, "w").write("0: 0-0, 0, 0;\n0: 1-63, 0, 0;\n")
    d = subprocess.run(["jpegtran", "-scans", script], input=b.getvalue(),
                       capture_output=True, check=True).stdout
    sos = d.find(b"\xff\xda")
    i = sos + 2 + int.from_bytes(d[sos + 2:sos + 4], "big")
    while not (d[i] == 0xFF and d[i + 1] != 0x00 and not 0xD0 <= d[i + 1] <= 0xD7):
        i += 1  # to the end of the DC scan's data
    assert d[-2:] == b"\xff\xd9"
    open(f"{out}/zscans.jpg", "wb").write(d[:i] + d[i:-2] * 600 + b"\xff\xd9")
    import os
    os.unlink(script)
    print("zscans.jpg")
