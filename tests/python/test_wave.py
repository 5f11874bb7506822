"""test_wave.py — feederd's wave pipeline through a real daemon and the
Python Loader: waveform datasets packed by packer (--store wave) from the
project's generators (gen-speech, gen-noise, gen-rir).

- Features: the daemon's fbank and MFCC of a centred chunk against
  torchaudio.compliance.kaldi (an independent implementation) on the same
  samples, and against packer's features of the same utterance (identical).
- Augmentation: determinism (same request, same bytes; another seed,
  other bytes), rank disjointness, exact resume at batch k, speed labels,
  that each augmentation changes the features, and refusals naming the
  missing or wrong noise/RIR dataset; damaged noise or RIR records cost only
  their augmentation, a removed noise dataset ends its stream clearly.
The DSP itself is held to references in tests/features (test_reverb: direct
convolution; test_augment: SNR; test_speed: pitch and length), to numpy in
test_dsp_numpy.py (convolution, SNR) and tests/genspeech (RT60 of the
generated RIRs)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import wave as wavmod

import numpy as np
import pytest

import feeder
from conftest import Daemon, run, tool

sys.path.insert(0, os.path.join(os.environ.get("FEEDER_SOURCE", ""), "tests", "bench"))
from feeder_lmdb import FeederLMDB  # noqa: E402

CHUNK = 200
L = (CHUNK - 1) * 160 + 400  # samples of a 200-frame chunk


@pytest.fixture(scope="module")
def wave_daemon(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("wave"))
    ds = os.path.join(root, "datasets")
    os.makedirs(ds)
    run(tool("tools/gen/gen-speech"), "4", "6", os.path.join(root, "speech"), "--seed", "7",
        "--min-dur", "2.5", "--max-dur", "4", "--threads", "2")
    run(tool("tools/gen/gen-noise"), "--seed", "3", "--count", "2", "--seconds", "2:3",
        os.path.join(root, "noise"))
    rirs = os.path.join(root, "rirs", "rir")  # one class folder
    run(tool("tools/gen/gen-rir"), "--seed", "4", "--count", "4", rirs)
    # Utterances of exactly one chunk, for packer vs daemon.
    exact = os.path.join(root, "exact", "spk")
    os.makedirs(exact)
    rng = np.random.default_rng(1)
    t = np.arange(L) / 16000.0
    for k in range(2):
        x = 3000 * np.sin(2 * np.pi * (150 + 50 * k) * t * (1 + 0.1 * np.sin(3 * t)))
        with wavmod.open(os.path.join(exact, "u%d.wav" % k), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(np.clip(x + rng.normal(0, 300, L), -32768, 32767).astype("<i2").tobytes())
    wave = ("--store", "wave")
    for src, name, opts in (("speech", "speech", wave), ("noise", "noise", wave),
                            ("rirs", "rir", wave), ("exact", "exact", wave),
                            ("exact", "exactfb", ("--bins", "80", "--dtype", "f32")),
                            ("exact", "exactmfcc", ("--features", "mfcc", "--dtype", "f32"))):
        run(tool("packer/packer"), "pack", "audio", *opts, os.path.join(root, src),
            os.path.join(ds, name))
    with Daemon(ds, root) as d:
        yield d


def loader(d, dataset="speech", batch=4, **wave):
    kw = {k: wave.pop(k) for k in ("seed", "epoch", "rank", "world_size", "shuffle", "dtype",
                                   "slots", "reconnect") if k in wave}
    kw.setdefault("dtype", "float32")
    kw.setdefault("shuffle", True)
    return feeder.Loader(dataset, batch, pipeline=feeder.Wave(**wave), socket=d.sock,
                         drop_last=False, return_index=True, timeout=60, **kw)


def epoch(ld):
    return [(x.copy(), y.copy(), i.copy()) for x, y, i in ld]


def assert_same(a, b):
    """Two runs' batches (data, labels, indices) identical, batch for batch."""
    assert len(a) == len(b)
    for (xa, ya, ia), (xb, yb, ib) in zip(a, b):
        assert np.array_equal(xa, xb) and np.array_equal(ya, yb) and np.array_equal(ia, ib)


def centred(d, dataset, index):
    x = FeederLMDB(os.path.join(d.datasets, dataset))
    label, payload, frames, dim, dtype = x.get(index)
    s = np.frombuffer(payload, "<i2").astype(np.float32)
    off = (len(s) - L) // 2
    return s[off:off + L]


# (features, wave.bins, packer's dataset of them, torchaudio's own options)
FEATURES = [("fbank", 80, "exactfb", {}),
            ("mfcc", 30, "exactmfcc", dict(num_ceps=30, use_energy=True))]


@pytest.mark.parametrize("kind,bins,packed,opts", FEATURES)
def test_features_match_torchaudio_kaldi(wave_daemon, kind, bins, packed, opts):
    # torchaudio computes in the waveform's precision: float64 makes it the
    # exact reference (its float32 run is itself ~1e-3 from it).
    import torch
    import torchaudio.compliance.kaldi as kaldi
    worst = 0.0
    for x, _, idx in loader(wave_daemon, train=False, features=kind, bins=bins, cmn="none",
                            shuffle=False):
        for b in range(len(idx)):
            w = torch.from_numpy(centred(wave_daemon, "speech", int(idx[b]))).double()[None]
            ref = getattr(kaldi, kind)(w, num_mel_bins=bins, dither=0.0, low_freq=20,
                                       high_freq=-400, energy_floor=0.0, **opts).numpy().T
            assert ref.shape == x[b].shape, (ref.shape, x[b].shape)
            worst = max(worst, float(np.abs(ref - x[b]).max()))
    print("max |daemon - torchaudio.compliance.kaldi|: %s %.2e" % (kind, worst))
    assert worst <= 1e-3, worst


@pytest.mark.parametrize("kind,bins,packed,opts", FEATURES)
def test_daemon_features_equal_packers(wave_daemon, kind, bins, packed, opts):
    ld = loader(wave_daemon, "exact", batch=2, train=False, features=kind, bins=bins, cmn="none",
                shuffle=False)
    (x, _, idx), = epoch(ld)
    ref = FeederLMDB(os.path.join(wave_daemon.datasets, packed))
    for b in range(2):
        _, m = ref.features(int(idx[b]))
        assert m.shape == (CHUNK, x.shape[1])
        assert np.array_equal(m.T, x[b]), "%s: %g" % (kind, np.abs(m.T - x[b]).max())


AUG = dict(noise="noise", noise_p=0.8, rir="rir", reverb_p=0.8, speed_p=0.5, gain_p=0.5,
           specaug_p=0.5, dither=1.0)


def test_same_request_same_bytes_other_seed_other_bytes(wave_daemon):
    a = epoch(loader(wave_daemon, seed=5, **AUG))
    b = epoch(loader(wave_daemon, seed=5, **AUG))
    c = epoch(loader(wave_daemon, seed=6, **AUG))
    assert len(a) == 6
    assert_same(a, b)
    assert not all(np.array_equal(xa, xc) for (xa, _, _), (xc, _, _) in zip(a, c))
    for x, _, _ in a:
        assert np.isfinite(x).all()


def test_each_augmentation_changes_the_chunk(wave_daemon):
    base = epoch(loader(wave_daemon, seed=9, shuffle=False))
    for opt in (dict(noise="noise", noise_p=1.0), dict(rir="rir", reverb_p=1.0),
                dict(speed_p=1.0), dict(gain_p=1.0, gain_db=(3, 6)), dict(specaug_p=1.0),
                dict(dither=1.0)):
        got = epoch(loader(wave_daemon, seed=9, shuffle=False, **opt))
        for (x0, _, i0), (x1, _, i1) in zip(base, got):
            assert np.array_equal(i0, i1)
            changed = [not np.array_equal(x0[b], x1[b]) for b in range(len(i0))]
            assert all(changed), opt
    # SpecAugment masks are zeros after CMN: whole rows and columns.
    x = epoch(loader(wave_daemon, seed=9, shuffle=False, specaug_p=1.0, time_mask_max=20,
                     freq_mask_max=10))[0][0]
    for b in range(len(x)):
        assert (np.abs(x[b]).sum(axis=1) == 0).sum() >= 1  # a frequency band
        assert (np.abs(x[b]).sum(axis=0) == 0).sum() >= 1  # a stretch of frames


def test_ranks_disjoint_and_resume_exact(wave_daemon):
    full = epoch(loader(wave_daemon, seed=2, **AUG))
    r0 = epoch(loader(wave_daemon, seed=2, rank=0, world_size=2, **AUG))
    r1 = epoch(loader(wave_daemon, seed=2, rank=1, world_size=2, **AUG))
    i0 = np.concatenate([i for _, _, i in r0])
    i1 = np.concatenate([i for _, _, i in r1])
    assert not set(i0.tolist()) & set(i1.tolist())
    assert sorted(i0.tolist() + i1.tolist()) == list(range(24))
    # A sample's features depend on (seed, epoch, index) only, not on who
    # reads it: rank 0's first sample equals that sample in the full epoch.
    allx = np.concatenate([x for x, _, _ in full])
    alli = np.concatenate([i for _, _, i in full])
    x0 = np.concatenate([x for x, _, _ in r0])
    for k in range(len(i0)):
        assert np.array_equal(x0[k], allx[list(alli).index(i0[k])])
    ld = loader(wave_daemon, seed=2, **AUG)
    it = iter(ld)
    for _ in range(2):
        next(it)
    state = ld.state_dict()
    ld2 = loader(wave_daemon, seed=2, **AUG)
    ld2.load_state_dict(state)
    assert_same(full[2:], epoch(ld2))


def test_speed_labels_new_speaker_per_factor(wave_daemon):
    same = epoch(loader(wave_daemon, seed=4, speed_p=1.0))
    new = epoch(loader(wave_daemon, seed=4, speed_p=1.0, speed_labels="new"))
    ys = np.concatenate([y for _, y, _ in same])
    yn = np.concatenate([y for _, y, _ in new])
    assert ys.max() < 4 and yn.max() >= 4 and yn.max() < 12
    assert np.array_equal(yn % 4, ys)
    for (xa, _, _), (xb, _, _) in zip(same, new):
        assert np.array_equal(xa, xb)


@pytest.mark.parametrize("opts,want", [
    (dict(noise="nosuch", noise_p=0.5), "wave.noise: no dataset named 'nosuch'"),
    (dict(rir="exactfb", reverb_p=0.5), "wave.rir dataset 'exactfb' holds features"),
    (dict(noise_p=0.5), "wave.noise names no dataset"),
    (dict(noise="speech", noise_p=0.5), "no records in a class named noise, music or speech"),
    (dict(features="mfcc", bins=20, ceps=24), "wave.ceps 24 is above wave.bins 20"),
    # more mel filters than the 512-point FFT has room for: refused at open,
    # not accepted with every sample then unusable
    (dict(bins=256), "wave.bins 256 is not within 3..124"),
    (dict(features="mfcc", bins=125, ceps=30), "wave.bins 125 is not within 3..124"),
    (dict(snr_noise=(10, 5), noise="noise"), "wave.snr_noise_min 10 is above"),
    (dict(dataset="exactfb"),
     "holds feature matrices, not waveforms: open it with pipeline features"),
])
def test_refusals_name_the_cause(wave_daemon, opts, want):
    with pytest.raises(feeder.FeederError) as e:
        epoch(loader(wave_daemon, **opts))
    assert want in str(e.value), str(e.value)
    # The daemon serves on.
    assert len(epoch(loader(wave_daemon, train=False))) == 6


@pytest.mark.parametrize("kind,dim", [("fbank", 124), ("mfcc", 30)])
def test_most_bins_every_sample_usable(wave_daemon, kind, dim):
    """At the bound (FEEDER_MAX_WAVE_BINS, 124) every filter covers an FFT
    bin: the stream serves every sample, none replaced."""
    batches = epoch(loader(wave_daemon, train=False, features=kind, bins=124,
                           ceps=30 if kind == "mfcc" else None, cmn="none"))
    assert len(batches) == 6, len(batches)
    for x, _, _ in batches:
        assert x.shape[1] == dim and np.isfinite(x).all(), x.shape
    assert "unusable" not in open(wave_daemon.log).read()


def test_feederctl_streams_shows_the_augmentation(wave_daemon):
    """feederctl streams (table and --json) shows a wave stream's settings:
    the noise and RIR datasets, each augmentation's probability, the SNR
    ranges, speed labels, SpecAugment masks, dither; the daemon's log names
    them when the stream opens."""
    feederctl = tool("tools/feederctl")
    ld = loader(wave_daemon, seed=3, noise="noise", noise_p=0.6, snr_noise=(0, 15),
                snr_music=(5, 15), snr_babble=(13, 20), rir="rir", reverb_p=0.6, speed_p=0.5,
                speed_labels="new", specaug_p=0.6, dither=1.0, dtype="float16")
    want = ("wave fbank 80, chunk 200 train, cmn utt, noise=noise p=0.6 snr "
            "0..15/5..15/13..20 babble 3..7, rir=rir p=0.6, speed p=0.5 labels=new, "
            "gain off, specaug p=0.6 t1x10 f1x8, dither 1, f16")
    it = iter(ld)
    next(it)  # the stream is open while the Loader iterates
    try:
        s = json.loads(run(feederctl, "--socket", wave_daemon.sock, "streams", "--json"))
        mine = [x for x in s["streams"] if x["dataset"] == "speech"]
        assert len(mine) == 1, s
        assert mine[0]["pipeline"] == "wave" and mine[0]["settings"] == want, mine[0]
        table = run(feederctl, "--socket", wave_daemon.sock, "streams").splitlines()
        row = [i for i, line in enumerate(table) if " speech " in line]
        assert len(row) == 1 and " wave " in table[row[0]], table
        print("\n".join(table))
        assert table[row[0] + 1].strip() == want, table
        # Eval: no augmentation, whatever was asked.
        ev = loader(wave_daemon, train=False, noise="noise", noise_p=0.6)
        it2 = iter(ev)
        next(it2)
        s = json.loads(run(feederctl, "--socket", wave_daemon.sock, "streams", "--json"))
        got = sorted(x["settings"] for x in s["streams"])
        assert got == sorted([want, "wave fbank 80, chunk 200 eval, cmn utt, no augmentation, "
                              "f32"]), got
        ev.close()
    finally:
        ld.close()
    with open(wave_daemon.log) as f:
        assert any("opened: 'speech'" in line and line.rstrip().endswith("; " + want)
                   for line in f), wave_daemon.log_tail()


_CLIENT = r"""
import json, os, sys
import feeder
sock, state_path = sys.argv[1], sys.argv[2]
ld = feeder.Loader("speech", 4, pipeline=feeder.Wave(**json.loads(sys.argv[3])), socket=sock,
                   dtype="float32", drop_last=False, seed=3, timeout=60, shuffle=True)
for k, _ in enumerate(ld):
    with open(state_path + ".tmp", "w") as f:
        json.dump(ld.state_dict(), f)
    os.replace(state_path + ".tmp", state_path)
    if k == 1:
        print("ready", flush=True)
        sys.stdin.readline()  # killed here
"""


def test_client_killed_mid_epoch_then_resumed(wave_daemon, tmp_path):
    """kill -9 of a wave client mid-epoch: the daemon serves on, and a new
    client from the state the dead one saved gets exactly the epoch's tail."""
    full = epoch(loader(wave_daemon, seed=3, **AUG))
    state = str(tmp_path / "state.json")
    p = subprocess.Popen([sys.executable, "-c", _CLIENT, wave_daemon.sock, state, json.dumps(AUG)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    with open(state) as f:
        saved = json.load(f)
    ld = loader(wave_daemon, seed=3, **AUG)
    ld.load_state_dict(saved)
    assert_same(full[2:], epoch(ld))


def test_reconnect_after_daemon_restart(wave_daemon, own_daemon):
    """A wave Loader with reconnect= survives its feederd killed and
    restarted mid-epoch with the exact batches of an undisturbed run."""
    d = own_daemon(wave_daemon.datasets)
    ref = epoch(loader(d, seed=8, slots=2, shuffle=False, **AUG))
    ld = loader(d, seed=8, slots=2, shuffle=False, reconnect=20, **AUG)
    got = []
    for x, y, i in ld:
        got.append((x.copy(), y.copy(), i.copy()))
        if len(got) == 2:
            d.kill(signal.SIGKILL)
            d = own_daemon(wave_daemon.datasets)
    assert ld.reconnects == 1
    assert_same(ref, got)


def _damage_every_record(src, dst, only=None):
    """A copy of dataset src at dst with one payload byte of every record
    (or of the records listed in only) flipped (its CRC no longer matches)."""
    shutil.copytree(src, dst)
    x = FeederLMDB(src)
    path = os.path.join(dst, "data.mdb")
    data = bytearray(open(path, "rb").read())
    for i in (range(x.samples) if only is None else only):
        payload = x.get(i)[1]
        probe = bytes(payload[len(payload) // 2:len(payload) // 2 + 48])
        at = data.find(probe)
        assert at >= 0 and data.find(probe, at + 1) < 0, "record %d: payload not unique" % i
        data[at] ^= 0x55
    open(path, "wb").write(data)
    return x.samples


def _copies(wave_daemon, tmp_path, *names):
    """A datasets folder in tmp_path with copies of the named datasets."""
    ds = str(tmp_path / "datasets")
    for name in names:
        shutil.copytree(os.path.join(wave_daemon.datasets, name), os.path.join(ds, name))
    return ds


def test_unusable_sample_logged_once_as_it_is_handled(wave_daemon, own_daemon, tmp_path):
    """A damaged speech record: the first stream that meets it says so once,
    naming itself and what it does (the next sample of its order in its
    place); a second stream meets it too and replaces it in the same way,
    without a second line (the log does not claim more than that)."""
    ds = str(tmp_path / "datasets")
    _damage_every_record(os.path.join(wave_daemon.datasets, "speech"), os.path.join(ds, "bad"),
                         only=[3])
    d = own_daemon(ds)
    for _ in range(2):
        got = epoch(loader(d, "bad", train=False, shuffle=False))
        idx = np.concatenate([i for _, _, i in got])
        assert len(idx) == 24 and 3 not in idx and list(idx).count(4) == 2, idx
    lines = [l for l in open(d.log).read().splitlines()
             if "dataset 'bad': sample 3 is unusable" in l]
    assert len(lines) == 1, lines
    assert " is unusable in stream " in lines[0] and "CRC" in lines[0].upper(), lines[0]
    assert ("that stream reads the next sample of its order in its place, other streams "
            "try it themselves, and it is not logged again") in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["noise", "rir"])
def test_damaged_noise_or_rir_records_cost_only_their_augmentation(wave_daemon, own_daemon,
                                                                    tmp_path, kind):
    """Every record of the noise (or RIR) dataset damaged: each chunk that
    draws one goes without that augmentation (the same bytes as a stream
    without it), no speech sample is replaced, and the log names each
    damaged record once."""
    ds = _copies(wave_daemon, tmp_path, "speech")
    n = _damage_every_record(os.path.join(wave_daemon.datasets, kind), os.path.join(ds, "bad"))
    d = own_daemon(ds)
    opts = dict(noise="bad", noise_p=1.0) if kind == "noise" else dict(rir="bad", reverb_p=1.0)
    assert_same(epoch(loader(d, seed=4, **opts)), epoch(loader(d, seed=4)))
    log = open(d.log).read()
    bad = [l for l in log.splitlines() if "dataset 'bad', record" in l]
    assert bad, "no warning about the damaged records: " + log[-2000:]
    named = [l.split("record ")[1].split()[0] for l in bad]
    assert len(named) == len(set(named)) and len(named) <= n, bad
    assert ("wave.%s" % ("noise" if kind == "noise" else "rir")) in bad[0], bad[0]
    assert "is unusable" not in log, log[-2000:]


def test_noise_dataset_removed_ends_the_stream_clearly(wave_daemon, own_daemon, tmp_path):
    """The noise dataset removed (rm -rf) while a stream draws from it: that
    stream ends with an error naming wave.noise and the removal, no speech
    sample is blamed, and a stream without noise keeps being served."""
    ds = _copies(wave_daemon, tmp_path, "speech", "noise")
    d = own_daemon(ds)
    ld = loader(d, seed=2, noise="noise", noise_p=1.0)
    epoch(ld)
    shutil.rmtree(os.path.join(ds, "noise"))
    deadline = time.monotonic() + 10
    with pytest.raises(feeder.FeederError) as e:
        for k in range(1, 100000):
            ld.set_epoch(k)
            epoch(ld)
            assert time.monotonic() < deadline, "the stream went on after the removal"
    msg = str(e.value)
    assert "wave.noise dataset" in msg and "removed" in msg, msg
    assert "no usable sample" not in msg, msg
    assert "is unusable" not in open(d.log).read()
    clean = epoch(loader(d, seed=2))
    assert sum(len(i) for _, _, i in clean) == 24
