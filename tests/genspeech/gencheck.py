"""gencheck.py — what the generator tests share: finding a built generator
(FEEDER_BUILD, else ./build of this checkout, as the tools/gen/gen-* wrappers
do), running it through its wrapper, the checks every generator passes
(bad arguments refused with one usage line; output byte-identical for a
seed whatever the thread count, other for another seed), reading a WAV file
with every header field checked against the canonical 44-byte PCM header
that wav_write writes, the Schroeder decay measure, and main() that runs a
pytest file as one meson test (exit 0 pass, 1 fail, 77 skip when a Python
module it needs or the generator is missing)."""
import csv
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


def need(*names):
    """Skip the calling test module unless each generator is built."""
    import pytest
    for g in names:
        if not exe(g):
            pytest.skip(f"{g} is not built", allow_module_level=True)


def assert_usage(name, bad):
    """tools/gen/NAME with the arguments bad exits 2 with one usage line."""
    p = run(name, *bad)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "usage" in p.stderr, \
        f"{bad}: exit {p.returncode}, stderr {p.stderr!r}"


def seed_runs(base, name, *args, seed):
    """tools/gen/NAME args --seed seed into base/a and (with --threads 1)
    base/b, and with seed + 1 into base/c: the folders by those names."""
    dirs = {}
    for d, extra in (("a", [seed]), ("b", [seed, "--threads", 1]), ("c", [seed + 1])):
        dirs[d] = os.path.join(base, d)
        p = run(name, *args, "--seed", *extra, dirs[d])
        assert p.returncode == 0, f"{name} {d}: exit {p.returncode}: {p.stderr}"
        assert "wrote" in p.stdout, f"{name} {d} did not say what it wrote: {p.stdout!r}"
    return dirs


def files(top):
    """Every file under top, by its path relative to top, sorted."""
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs)


def tsv(path):
    """The rows of a tab-separated file with a header line, as dicts."""
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def assert_deterministic(dirs, seed):
    """Every file of seed_runs' a is byte-identical in b (another thread
    count) and, for a WAV file, different in c (another seed)."""
    a = dirs["a"]
    assert files(a), f"{a} is empty"
    for f in files(a):
        data = open(os.path.join(a, f), "rb").read()
        assert data == open(os.path.join(dirs["b"], f), "rb").read(), \
            f"{f}: differs between 1 thread and many with the same seed"
        if f.endswith(".wav"):
            assert data != open(os.path.join(dirs["c"], f), "rb").read(), \
                f"{f}: identical for seeds {seed} and {seed + 1}"


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


def main(test_file, generators, modules=("numpy", "scipy")):
    """Run test_file (which imports modules and pytest) under pytest as one
    meson test."""
    import importlib
    try:
        for m in (*modules, "pytest"):
            importlib.import_module(m)
    except ImportError as e:
        print(f"SKIP: {sys.executable} lacks {e.name}", file=sys.stderr)
        return 77
    import pytest
    for g in generators:
        if not exe(g):
            print(f"SKIP: {os.path.join(BUILD, 'tools', 'gen', g)} is not built", file=sys.stderr)
            return 77
    rc = pytest.main(["-q", "-s", "-p", "no:cacheprovider", test_file])
    return 0 if rc == 0 else 1
