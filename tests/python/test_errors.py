"""test_errors.py — failures reach Python as feeder exceptions carrying the
daemon's sentence: a missing dataset, a bad name, bad options (caught in
Python or refused by the daemon), no daemon, a daemon killed mid-epoch (an
exception, not a hang; with reconnect= the Loader goes on, exactly) and a
daemon that stops answering (a timeout)."""
import os
import signal
import time

import pytest

import feeder
from conftest import digest
from feeder._lib import lib


@pytest.mark.parametrize("name,code", [("no-such-set", lib.FEEDER_ENODATASET),
                                       ("../etc", lib.FEEDER_EBADNAME)])
def test_missing_or_bad_dataset(daemon, name, code):
    with pytest.raises(feeder.DatasetError) as e:
        feeder.Loader(name, 8, socket=daemon.sock)
    assert name in str(e.value) and e.value.code == code
    assert isinstance(e.value, feeder.FeederError)


@pytest.mark.parametrize("kw,words,code", [
    # caught in Python
    (dict(dtype="int7"), "dtype", None),
    (dict(layout="CHWN"), "layout", None),
    (dict(placement="tpu"), "placement", None),
    (dict(pipeline="audio"), "pipeline", None),
    (dict(on_error="ignore"), "on_error", None),
    (dict(seed=-1), "seed", None),
    (dict(batch_size=-1), "batch_size", None),
    # refused by the daemon (proto_opts_check): its sentence names the field
    # and the range
    (dict(batch_size=0), "batch 0 is not within 1..65536", lib.FEEDER_EINVAL),
    (dict(slots=0), "slots 0 is not within 1..256", lib.FEEDER_EINVAL),
    (dict(rank=2, world_size=2), "rank 2 is not below world 2", lib.FEEDER_EINVAL),
    (dict(pipeline=feeder.Jpeg(0)), "jpeg.height 0", None),
    (dict(pipeline=feeder.Jpeg(32, scale=(0.5, 3.0))), "scale", None),
])
def test_bad_option(daemon, kw, words, code):
    kw.setdefault("batch_size", 8)
    with pytest.raises(feeder.OptionError) as e:
        feeder.Loader("imgs", socket=daemon.sock, **kw)
    assert words in str(e.value) and isinstance(e.value, ValueError)
    assert code is None or e.value.code == code


def test_bad_pipeline_value():
    with pytest.raises(feeder.OptionError):
        feeder.Features(cmn="global")
    with pytest.raises(feeder.OptionError):
        feeder.Jpeg((1, 2, 3))


def test_no_daemon(workdir):
    t0 = time.monotonic()
    with pytest.raises(feeder.DaemonConnectionError) as e:
        feeder.Loader("imgs", 8, socket=os.path.join(workdir, "nobody.sock"), connect_timeout=0.3)
    assert "nobody.sock" in str(e.value)
    assert isinstance(e.value, ConnectionError)
    assert time.monotonic() - t0 < 5


def test_state_of_other_request_refused(daemon):
    a = feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(32), socket=daemon.sock)
    b = feeder.Loader("imgs", 4, pipeline=feeder.Jpeg(32), socket=daemon.sock)
    with pytest.raises(feeder.OptionError) as e:
        b.load_state_dict(a.state_dict())
    assert "batch_size" in str(e.value)


def test_killed_daemon_raises(own_daemon):
    d = own_daemon()
    ld = feeder.Loader("imgs", 2, pipeline=feeder.Jpeg(32), slots=2, socket=d.sock, timeout=10)
    it = iter(ld)
    next(it)
    d.kill(signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(feeder.DaemonConnectionError) as e:
        for _ in it:
            pass
    assert not isinstance(e.value, feeder.DaemonTimeoutError), str(e.value)
    assert time.monotonic() - t0 < 5
    # A new Loader on the dead socket fails fast as well.
    with pytest.raises(feeder.DaemonConnectionError):
        feeder.Loader("imgs", 2, socket=d.sock, connect_timeout=0.2)


def test_stalled_daemon_times_out(own_daemon):
    d = own_daemon()
    ld = feeder.Loader("imgs", 2, pipeline=feeder.Jpeg(32), slots=2, socket=d.sock, timeout=0.5)
    it = iter(ld)
    next(it)
    d.kill(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(feeder.DaemonTimeoutError) as e:
            for _ in it:
                pass
        assert 0.4 < time.monotonic() - t0 < 5
        assert isinstance(e.value, TimeoutError) and "0.5 s" in str(e.value)
    finally:
        d.kill(signal.SIGCONT)


def test_reconnect_after_daemon_restart(own_daemon):
    """A Loader with reconnect= survives feederd being killed and restarted
    mid-epoch: the batches go on at the exact one after the last delivered,
    identical (labels and bytes) to an undisturbed run."""
    d = own_daemon()
    opts = dict(pipeline=feeder.Jpeg(32), dtype="uint8", slots=2, socket=d.sock, seed=4,
                drop_last=False)
    ref = [digest(*b) for b in feeder.Loader("imgs", 3, **opts)]
    assert len(ref) == 14  # 40 samples in batches of 3
    ld = feeder.Loader("imgs", 3, reconnect=20, **opts)
    got = []
    for data, labels in ld:
        got.append(digest(data, labels))
        if len(got) == 5:
            d.kill(signal.SIGKILL)
            d = own_daemon()  # same socket path
    assert ld.reconnects == 1
    assert got == ref


def test_no_reconnect_by_default(own_daemon):
    d = own_daemon()
    ld = feeder.Loader("imgs", 3, pipeline=feeder.Jpeg(32), slots=2, socket=d.sock)
    assert ld.reconnect == 0
    with pytest.raises(feeder.OptionError):
        feeder.Loader("imgs", 3, pipeline=feeder.Jpeg(32), socket=d.sock, reconnect=-1)
