"""feeder_testlib.py — what the Python tests and benchmarks share: the
build's programs ($FEEDER_BUILD), a real feederd on a private temporary
socket (start, wait until it accepts, stop), and small datasets made with
the project's own generators and packer (images, speech features).

tests/python/conftest.py wraps these in pytest fixtures (a benchmark may
import this module the same way: sys.path gets tests/lib/python). Failures
are exceptions with the reason, never a quiet False: a test decides what a
failure means (only AudioMissing, a build without the audio libraries, is
a reason to skip).
"""
import os
import shutil
import socket as socketmod
import subprocess
import tempfile
import time
from typing import Optional, Sequence

BUILD = os.environ.get("FEEDER_BUILD", "")


class ToolMissing(RuntimeError):
    """A program of the build is not there (FEEDER_BUILD unset or wrong, or
    the program not built)."""


class AudioMissing(RuntimeError):
    """packer was built without the audio libraries (FFTW, libsndfile,
    libsoxr), so there can be no speech dataset."""


def tool(rel: str) -> str:
    """The path of a program of the build, e.g. tool("daemon/feederd")."""
    path = os.path.join(BUILD, rel)
    if not BUILD or not os.access(path, os.X_OK):
        raise ToolMissing("%s is not built (FEEDER_BUILD=%r)" % (rel, BUILD))
    return path


def run(*argv: str) -> str:
    """Run a program; its stdout, or RuntimeError with its stderr's tail."""
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(argv), r.returncode, r.stderr[-2000:]))
    return r.stdout


class Daemon:
    """A feederd serving the datasets under `datasets`, on a socket in
    workdir (or in a temporary directory of its own, removed by stop()),
    started with --workers 2 and no configuration file (extra: more
    command-line flags). The constructor returns once the daemon accepts
    connections; RuntimeError with its log's tail otherwise."""

    def __init__(self, datasets: str, workdir: Optional[str] = None, *extra: str,
                 start_timeout: float = 10.0):
        self.datasets = datasets
        self._own = workdir is None
        self.workdir = tempfile.mkdtemp(prefix="feederd-") if workdir is None else workdir
        self.sock = os.path.join(self.workdir, "feederd.sock")
        self.log = os.path.join(self.workdir, "feederd.log")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [tool("daemon/feederd"), "--config", "/dev/null", "--socket", self.sock,
                 "--datasets", datasets, "--workers", "2", *extra],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        try:
            while not self._accepts():
                if self.proc.poll() is not None:
                    raise RuntimeError("feederd exited at start: " + self.log_tail())
                if time.monotonic() > deadline:
                    raise RuntimeError("feederd did not listen within %g s: %s"
                                       % (start_timeout, self.log_tail()))
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    def _accepts(self) -> bool:
        with socketmod.socket(socketmod.AF_UNIX, socketmod.SOCK_SEQPACKET) as s:
            return s.connect_ex(self.sock) == 0

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def kill(self, sig: int = 9) -> None:
        """Send sig; for SIGKILL and SIGTERM, wait until the daemon is gone."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig in (9, 15):
                self.proc.wait(10)

    def stop(self) -> None:
        """Kill the daemon (if it still runs) and remove a directory of its own."""
        self.kill()
        if self._own:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "Daemon":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def build_images(dest: str, src: str, count: int = 40, classes: int = 4, seed: int = 3,
                 shorter: int = 48, unique: bool = False) -> str:
    """dest: a packed dataset of count generated photos of classes classes
    (gen-images into src, then packer pack images), pre-resized to a
    shorter side of `shorter` so that decoding is cheap on a shared
    machine; unique: packed from a list whose label is the sample's number
    (in the order of the sorted file names). Returns dest, whose parent
    folder it makes if need be."""
    run(tool("tools/gen/gen-images"), str(count), src, "--classes", str(classes),
        "--seed", str(seed), "--threads", "1")
    listed = []
    if unique:
        names = sorted(os.path.relpath(os.path.join(d, f), src)
                       for d, _, fs in os.walk(src) for f in fs if f.endswith(".jpg"))
        if len(names) != count:
            raise RuntimeError("gen-images made %d photos, not %d" % (len(names), count))
        listed = ["--list", src + ".tsv"]
        with open(listed[1], "w") as f:
            f.writelines("%s\t%d\n" % (n, i) for i, n in enumerate(names))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    run(tool("packer/packer"), "pack", "images", *listed, "--resize-shorter", str(shorter),
        "--threads", "1", src, dest)
    return dest


def build_speech(dest: str, src: str, speakers: int = 3, utterances: int = 4, seed: int = 5,
                 pack_args: Sequence[str] = ()) -> str:
    """dest: speakers x utterances synthetic utterances of 1 to 2 s
    (gen-speech into src) packed as fbank features (packer pack audio, with
    pack_args, e.g. "--store", "wave"). Returns dest; AudioMissing when
    packer has no audio support, RuntimeError on any other failure."""
    run(tool("tools/gen/gen-speech"), str(speakers), str(utterances), src, "--seed", str(seed),
        "--min-dur", "1", "--max-dur", "2", "--threads", "1")
    try:
        run(tool("packer/packer"), "pack", "audio", "--threads", "1", *pack_args, src, dest)
    except RuntimeError as e:
        if "without audio support" in str(e):
            raise AudioMissing(str(e)) from None
        raise
    return dest
