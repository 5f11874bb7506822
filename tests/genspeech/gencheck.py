"""gencheck.py — what the generator tests share: finding a built generator
(FEEDER_BUILD, else ./build of this checkout, as the tools/gen/gen-* wrappers
do), running it through its wrapper, reading a WAV file with every header
field checked against the canonical 44-byte PCM header that wav_write
writes, the Schroeder decay measure, and main() that runs a pytest file as
one meson test (exit 0 pass, 1 fail, 77 skip when NumPy, SciPy, pytest or
the generator is missing)."""
import os
import struct
import subprocess
import sys

SOURCE = os.environ.get("FEEDER_SOURCE",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("FEEDER_BUILD", os.path.join(SOURCE, "build"))


def exe(name):
    """The built generator, or None when it is not built."""
    path = os.path.join(BUILD, "tools", "gen", name)
    return path if os.access(path, os.X_OK) else None


def run(name, *args, timeout=300):
    """Run tools/gen/NAME (the source-tree wrapper) with args."""
    return subprocess.run([os.path.join(SOURCE, "tools", "gen", name), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def read_wav(path, rate=None):
    """(samples as float64 in [-1, 1), rate) of a canonical mono 16-bit WAV;
    AssertionError naming the field that is off."""
    import numpy as np
    data = open(path, "rb").read()
    assert len(data) >= 44, f"{path}: shorter than a WAV header"
    (riff, riff_size, wave, fmt, fmt_size, tag, channels, fs, byte_rate, align, bits,
     data_id, data_size) = struct.unpack("<4sI4s4sIHHIIHH4sI", data[:44])
    assert (riff, wave, fmt, data_id) == (b"RIFF", b"WAVE", b"fmt ", b"data"), \
        f"{path}: not a canonical RIFF/WAVE file"
    assert riff_size == len(data) - 8, f"{path}: RIFF size {riff_size} != file size - 8"
    assert fmt_size == 16 and tag == 1, f"{path}: fmt chunk is not plain PCM"
    assert (channels, bits) == (1, 16), f"{path}: {channels} channels of {bits} bits"
    assert rate is None or fs == rate, f"{path}: {fs} Hz, expected {rate}"
    assert byte_rate == fs * 2 and align == 2, f"{path}: byte rate {byte_rate}, align {align}"
    assert data_size == len(data) - 44, f"{path}: data size {data_size} != file size - 44"
    return np.frombuffer(data[44:], dtype="<i2").astype(np.float64) / 32768.0, fs


def schroeder_t(x, fs, top=-5.0, bottom=-25.0):
    """Reverberation time from the Schroeder backward integral of x: the
    least-squares line through the decay curve between top and bottom dB,
    extrapolated to -60 dB (T20 for -5..-25, T30 for -5..-35)."""
    import numpy as np
    edc = np.cumsum((x ** 2)[::-1])[::-1]
    db = 10 * np.log10(edc / edc[0] + 1e-300)
    t = np.arange(len(x)) / fs
    m = (db <= top) & (db >= bottom)
    slope = np.polyfit(t[m], db[m], 1)[0]
    return -60.0 / slope


def main(test_file, generators):
    """Run test_file under pytest as one meson test."""
    try:
        import numpy  # noqa: F401
        import scipy  # noqa: F401
        import pytest
    except ImportError as e:
        print(f"SKIP: {sys.executable} lacks {e.name}", file=sys.stderr)
        return 77
    for g in generators:
        if not exe(g):
            print(f"SKIP: {os.path.join(BUILD, 'tools', 'gen', g)} is not built", file=sys.stderr)
            return 77
    rc = pytest.main(["-q", "-s", "-p", "no:cacheprovider", test_file])
    return 0 if rc == 0 else 1
