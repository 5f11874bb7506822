"""conftest.py — fixtures of the Python client's tests: small datasets made
with the project's own generators and packer, a real feederd on a temporary
socket, and the C reference consumer (c_reference) that the Loader's batches
are held to. Paths come from $FEEDER_BUILD, as for every other test.
"""
import os
import shutil
import socket as socketmod
import struct
import subprocess
import tempfile
import time

import numpy as np
import pytest

BUILD = os.environ.get("FEEDER_BUILD", "")


def tool(rel):
    path = os.path.join(BUILD, rel)
    if not BUILD or not os.access(path, os.X_OK):
        pytest.skip("%s is not built (FEEDER_BUILD=%r)" % (rel, BUILD))
    return path


def run(*argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), r.returncode, r.stderr[-2000:]))
    return r.stdout


class Daemon:
    """A feederd serving `datasets` on a socket in its own temporary dir
    (extra: more command-line flags)."""

    def __init__(self, datasets, workdir, *extra):
        self.datasets = datasets
        self.sock = os.path.join(workdir, "feederd.sock")
        self.log = os.path.join(workdir, "feederd.log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [tool("daemon/feederd"), "--config", "/dev/null", "--socket", self.sock,
                 "--datasets", datasets, "--workers", "2", *extra],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("feederd exited at start: " + self.log_tail())
            if os.path.exists(self.sock):
                s = socketmod.socket(socketmod.AF_UNIX, socketmod.SOCK_SEQPACKET)
                try:
                    s.connect(self.sock)
                    return
                except OSError:
                    pass
                finally:
                    s.close()
            time.sleep(0.05)
        raise RuntimeError("feederd did not listen within 10 s: " + self.log_tail())

    def log_tail(self):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-20:])
        except OSError:
            return ""

    def kill(self, sig=9):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig in (9, 15):
                self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


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
    os.makedirs(ds, exist_ok=True)
    src = os.path.join(workdir, "src-imgs")
    run(tool("tools/gen/gen-images"), "40", src, "--classes", "4", "--seed", "3", "--threads", "1")
    run(tool("packer/packer"), "pack", "images", "--resize-shorter", "48", "--threads", "1",
        src, os.path.join(ds, "imgs"))
    return ds


def add_speech(datasets, workdir):
    """datasets/speech: 3 speakers x 4 synthetic utterances as fbank
    features; returns False where packer has no audio support."""
    dest = os.path.join(datasets, "speech")
    if os.path.exists(dest):
        return True
    src = os.path.join(workdir, "src-speech")
    run(tool("tools/gen/gen-speech"), "3", "4", src, "--seed", "5", "--min-dur", "1", "--max-dur", "2",
        "--threads", "1")
    r = subprocess.run([tool("packer/packer"), "pack", "audio", "--threads", "1", src, dest],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r.returncode == 0


@pytest.fixture(scope="session")
def daemon(datasets, workdir):
    add_speech(datasets, workdir)
    d = Daemon(datasets, workdir)
    yield d
    d.stop()


@pytest.fixture
def own_daemon(datasets):
    """A daemon of the test's own, which the test may kill."""
    d = tempfile.mkdtemp(prefix="feeder-pytest-d-")
    daemons = []

    def start():
        daemons.append(Daemon(datasets, d))
        return daemons[-1]
    yield start
    for x in daemons:
        x.stop()
    shutil.rmtree(d, ignore_errors=True)


_NP = {"u8": np.uint8, "f16": np.float16, "f32": np.float32}


def c_batches(sock, workdir, dtype="f32", **kv):
    """Every batch the C client receives for the request: a list of dicts
    with epoch, index, replacements, labels and data (shaped arrays)."""
    out = os.path.join(workdir, "c-dump-%d.bin" % time.monotonic_ns())
    args = ["%s=%s" % (k, v) for k, v in kv.items()] + ["dtype=" + dtype]
    run(tool("tests/python/c_reference"), "dump", sock, out, *args)
    with open(out, "rb") as f:
        raw = f.read()
    os.unlink(out)
    batches, pos = [], 0
    while pos < len(raw):
        epoch, index, count, repl, s0, s1, s2, s3, nbytes = struct.unpack_from("<QQIIIIIIQ", raw, pos)
        pos += 48
        labels = np.frombuffer(raw, np.int32, count, pos)
        pos += 4 * count
        data = np.frombuffer(raw, _NP[dtype], nbytes // np.dtype(_NP[dtype]).itemsize, pos)
        pos += nbytes
        batches.append({"epoch": epoch, "index": index, "replacements": repl,
                        "labels": labels, "data": data.reshape(s0, s1, s2, s3)})
    return batches
