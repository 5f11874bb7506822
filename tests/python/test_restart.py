"""test_restart.py — the Loader across daemon restarts the way systemd
does them (systemctl restart: SIGTERM, wait for the exit, a new feederd on
the same socket), many rounds: every sample comes once per epoch, each
batch has the bytes of an undisturbed run, the batch the trainer holds
while the daemon stops and exits keeps its bytes, and the old rings (their
memfds and mappings) are let go, so the trainer's memory does not grow with
each restart. Labels are the sample numbers (the dataset is packed from a
list), so a batch blanked to zeros would show as a run of label 0."""
import os
import signal
import threading

import pytest

import feeder
from conftest import build_images, digest

N, BATCH, EPOCHS = 40, 4, 6


@pytest.fixture
def daemons(workdir, own_daemon):
    """start(): a feederd serving datasets-uniq/uniq, N photos whose label is
    their sample number, on the test's socket (the same path each time)."""
    ds = os.path.join(workdir, "datasets-uniq")
    if not os.path.exists(os.path.join(ds, "uniq")):
        build_images(os.path.join(ds, "uniq"), os.path.join(workdir, "src-uniq"), N, seed=9,
                     unique=True)
    return lambda: own_daemon(ds, "--shutdown-drain", "1")


def _opts(sock):
    return dict(pipeline=feeder.Jpeg(32), dtype="uint8", slots=3, socket=sock, seed=5,
                drop_last=False)


def _ring_figures():
    """Ring memfds this process has open, and mappings of them."""
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds += "memfd:feeder-ring" in os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass
    with open("/proc/self/maps") as f:
        maps = sum("memfd:feeder-ring" in line for line in f)
    return fds, maps


def _restart(d, start):
    """systemctl restart: SIGTERM, wait for the exit (feederd waits for its
    clients at most shutdown_drain), then a new daemon."""
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(10) == 0, d.log_tail()
    return start()


def test_sigterm_restarts_exactly_once(daemons):
    d = daemons()
    ref = {}
    ld = feeder.Loader("uniq", BATCH, **_opts(d.sock))
    for e in range(EPOCHS):
        ld.set_epoch(e)
        for i, (data, labels) in enumerate(ld):
            ref[(e, i)] = digest(data, labels)
    ld.close()
    assert len(ref) == EPOCHS * 10

    ld = feeder.Loader("uniq", BATCH, reconnect=20, **_opts(d.sock))
    seen = {e: [] for e in range(EPOCHS)}
    restarts, step, bg = 0, 0, None
    figures = []
    for e in range(EPOCHS):
        ld.set_epoch(e)
        for i, (data, labels) in enumerate(ld):
            got = digest(data, labels)
            assert data.any(), "epoch %d batch %d is all zeros" % (e, i)
            assert got == ref[(e, i)], "epoch %d batch %d differs from the undisturbed run" % (e, i)
            seen[e] += labels.tolist()
            step += 1
            if step % 2 == 0:  # a restart, the one before it over
                if bg is not None:
                    bg.join()
                    bg = None
                restarts += 1
            if step % 4 == 0:
                # The daemon stops and exits while this batch is held (and
                # more are announced): the batch keeps its bytes.
                d = _restart(d, daemons)
                assert digest(data, labels) == got, "the held batch changed when feederd stopped"
            elif step % 4 == 2:
                # A restart behind the trainer's back, as systemd does it.
                def later(old=d):
                    nonlocal d
                    d = _restart(old, daemons)
                bg = threading.Thread(target=later)
                bg.start()
            figures.append(_ring_figures())
    if bg is not None:
        bg.join()
    for e in range(EPOCHS):
        assert sorted(seen[e]) == list(range(N)), "epoch %d is not every sample once" % e
    # A restart in the background may fall before the next one with no
    # connection made between them: one reconnect for both (or three).
    assert ld.reconnects >= restarts // 3
    # One ring in use, and at most one of a lost connection still held.
    assert max(f for f, _ in figures) <= 2 and max(m for _, m in figures) <= 2, figures
    ld.close()
