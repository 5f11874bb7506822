"""conftest.py — fixtures of the Python client's tests: small datasets made
with the project's own generators and packer, a real feederd on a temporary
socket (both from tests/lib/python/feeder_testlib.py), and the C reference
consumer (c_reference) that the Loader's batches are held to; and the
per-case counts run_pytest.sh asks for. Paths come from $FEEDER_BUILD, as
for every other test.
"""
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from feeder_testlib import (AudioMissing, Daemon, build_images, build_speech,  # noqa: E402,F401
                            run, tool)

from feeder._lib import ffi, lib  # noqa: E402


def pytest_sessionfinish(session):
    """Per-case counts for tests/run, where run_pytest.sh asks for them."""
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if os.environ.get("FEEDER_PYTEST_COUNTS") and tr:
        n = {k: tr.stats.get(k, []) for k in ("passed", "failed", "error", "skipped")}
        with open(os.environ["FEEDER_PYTEST_COUNTS"], "w") as f:
            json.dump({"passed": len(n["passed"]), "failed": len(n["failed"] + n["error"]),
                       "skipped": len(n["skipped"]), "skipped_gpu": sum(
                           "no CUDA device" in str(r.longrepr) for r in n["skipped"])}, f)


@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="feeder-pytest-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def datasets(workdir):
    """datasets/imgs: 40 generated photos of 4 classes, pre-resized to a
    shorter side of 48 so that decoding is cheap on a shared machine."""
    ds = os.path.join(workdir, "datasets")
    build_images(os.path.join(ds, "imgs"), os.path.join(workdir, "src-imgs"))
    return ds


@pytest.fixture(scope="session")
def daemon(datasets, workdir):
    """feederd serving imgs and, where the build has audio support, speech:
    3 speakers x 4 synthetic utterances as fbank features (daemon.no_audio
    is then None, else the reason)."""
    no_audio = None
    try:
        build_speech(os.path.join(datasets, "speech"), os.path.join(workdir, "src-speech"))
    except AudioMissing as e:
        no_audio = str(e)
    with Daemon(datasets, workdir) as d:
        d.no_audio = no_audio
        yield d


@pytest.fixture
def speech(daemon):
    """The session daemon, for a test of the speech dataset: skipped only in
    a build without audio support."""
    if daemon.no_audio:
        pytest.skip("this build has no audio support: %s" % daemon.no_audio)
    return daemon


@pytest.fixture
def own_daemon(request):
    """start(datasets=None, *flags): a daemon of the test's own, which the
    test may kill, serving datasets (by default the session's), always on
    the same socket path."""
    d = tempfile.mkdtemp(prefix="feeder-pytest-d-")
    daemons = []

    def start(datasets=None, *flags):
        daemons.append(Daemon(datasets or request.getfixturevalue("datasets"), d, *flags))
        return daemons[-1]
    yield start
    for x in daemons:
        x.stop()
    shutil.rmtree(d, ignore_errors=True)


def digest(data, labels):
    """A batch as (labels, SHA-1 of its bytes), to compare with another run."""
    return labels.tolist(), hashlib.sha1(np.ascontiguousarray(data).tobytes()).hexdigest()


_NP = {lib.FEEDER_DTYPE_U8: np.uint8, lib.FEEDER_DTYPE_F16: np.float16,
       lib.FEEDER_DTYPE_F32: np.float32}


def c_batches(sock, workdir, **fields):
    """Every batch the C client receives for the request: fields are fields
    of struct feeder_stream_opts by their C path (batch=8, seed=3,
    **{"jpeg.height": 32}), enums by their value (lib.FEEDER_*);
    the rest keep libfeeder's defaults. A list of dicts with epoch, index,
    replacements, labels and data (shaped arrays)."""
    out = os.path.join(workdir, "c-dump-%d.bin" % time.monotonic_ns())
    args = ["%s=%s" % kv for kv in fields.items()]
    run(tool("tests/python/c_reference"), "dump", sock, out, *args)
    o = ffi.new("struct feeder_stream_opts *")
    lib.feeder_stream_opts_init(o)
    dtype = np.dtype(_NP[int(fields.get("dtype", o.dtype))])
    with open(out, "rb") as f:
        raw = f.read()
    os.unlink(out)
    batches, pos = [], 0
    while pos < len(raw):
        epoch, index, count, repl, s0, s1, s2, s3, nbytes = struct.unpack_from("=QQIIIIIIQ", raw, pos)
        pos += 48
        labels = np.frombuffer(raw, np.int32, count, pos)
        pos += 4 * count
        data = np.frombuffer(raw, dtype, nbytes // dtype.itemsize, pos)
        pos += nbytes
        batches.append({"epoch": epoch, "index": index, "replacements": repl,
                        "labels": labels, "data": data.reshape(s0, s1, s2, s3)})
    return batches
