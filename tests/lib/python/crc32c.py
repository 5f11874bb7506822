"""crc32c.py — CRC-32C (Castagnoli, reflected), the checksum of Feeder's
records, checkpoints and shard files, in plain Python for the test scripts
that check or forge those bytes without Feeder's C code. No dependencies,
so any interpreter (Debian's, moto's virtual environment) can import it."""

_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 & -(_c & 1))
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c = _TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
