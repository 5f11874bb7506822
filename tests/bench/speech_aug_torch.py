#!/usr/bin/python3
"""speech_aug_torch.py — the two sides of tests/bench/speech_aug.sh, with one
set of augmentation options for both (AUG below).

    speech_aug_torch.py peer DATASETS --aug 1 --chunks 1280 --batch 32 --workers 2
    speech_aug_torch.py stages DATASETS --aug 1 --chunks 300
    PYTHONPATH=$BUILD/client/python speech_aug_torch.py feeder DATASETS \\
        --socket S --aug 1 --chunks 1280 --batch 32

DATASETS holds the wave datasets speech, noise (classes noise, music,
speech) and rir, packed by `packer pack audio --store wave`.

peer: the pipeline people run today, written as the wespeaker / Kaldi recipe
does it: a PyTorch DataLoader (num_workers processes) whose Dataset reads a
record from the speech LMDB (feeder_lmdb.FeederLMDB), cuts a random chunk
of 200 frames (32240 samples at 16 kHz, scaled to [-1, 1] as
torchaudio.load gives it), and in train mode, each with its probability:
speed perturbation (sox "speed" through torchaudio.sox_effects, or
torchaudio.functional.resample from 16000 f to 16000 where sox is missing;
the cut is made long enough that the perturbed chunk has its 32240 samples),
reverberation by an RIR drawn from the RIR LMDB (unit energy, aligned on its
peak, scipy.signal.fftconvolve, cut to the chunk, the chunk's energy kept,
as Kaldi's wav-reverberate), additive noise of a category drawn among
noise/music/babble from the noise LMDB at an SNR drawn from the category's
range (babble: 3 to 7 speech recordings summed, one SNR for the sum), then
torchaudio.compliance.kaldi.fbank (80 bins, the int16 scale, dither 1 in
train mode and 0 otherwise), CMN over the chunk, SpecAugment (one time mask
of up to 10 frames, one frequency mask of up to 8 bins, set to 0), and the
default collate into (batch, 80, 200). With --aug 0: fbank + CMN only.
The DataLoader runs one long iterator (a sampler over --warmup + --chunks
draws of the utterances, reshuffled every pass, so no epoch restarts): the
first --warmup batches (at least what its workers prefetch) are not timed.
Prints JSON: chunks_per_s over the --chunks timed chunks.

stages: the peer's Dataset in this process on one thread, each stage timed
over --chunks chunks (after a warm-up; scaled per item by its CPU/wall
ratio, see Timer), and the collation of each --batch: JSON of ms per chunk
per stage and chunks/s/core (thread CPU time).

feeder: feeder.Loader(pipeline=feeder.Wave(same options), dtype float32)
from a running feederd, in this process (no torch import); the first
--warmup batches (more than its ring holds) are not timed. JSON:
chunks_per_s.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from feeder_lmdb import FeederLMDB  # noqa: E402

RATE = 16000
CHUNK = 200
L = (CHUNK - 1) * 160 + 400   # 32240 samples make 200 frames (25 ms every 10 ms)
BINS = 80
MAX_RIR = 32000               # feederd cuts RIRs there too (WAVE_MAX_RIR)
# The augmentation both sides run (feeder.Wave's names; the peer reads the
# same values). The SNR ranges and babble counts are the defaults of both
# (Kaldi's recipe), spelled out.
AUG = dict(noise_p=0.6, reverb_p=0.6, speed_p=0.5, specaug_p=0.6, dither=1.0,
           snr_noise=(0.0, 15.0), snr_music=(5.0, 15.0), snr_babble=(13.0, 20.0),
           babble=(3, 7), time_masks=1, time_mask_max=10, freq_masks=1, freq_mask_max=8)
CATEGORIES = ("noise", "music", "speech")  # MUSAN's folders; speech makes babble
SNR_KEY = {"noise": "snr_noise", "music": "snr_music", "speech": "snr_babble"}


def sox_works():
    """Whether torchaudio has its sox effects here (it is built with libsox)."""
    import torch
    import torchaudio
    try:
        torchaudio.sox_effects.apply_effects_tensor(torch.zeros(1, 1600), RATE,
                                                    [["speed", "1.1"], ["rate", str(RATE)]])
        return True
    except Exception:
        return False


class Timer:
    """Stage times of the items, in seconds (only when enabled: the
    DataLoader runs without). The stages are timed on the wall clock; an
    item preempted by the machine's other work has a wall time above its
    thread CPU time, and its stages are scaled by its CPU/wall ratio (as
    wave_stage_bench does), so that they sum to its CPU time."""

    def __init__(self, on):
        self.on = on
        self.s = {}

    def start(self):
        if self.on:
            self.item = {}
            self.c0 = time.thread_time()
            self.w0 = self.t = time.perf_counter()

    def lap(self, name):
        if self.on:
            t = time.perf_counter()
            self.item[name] = self.item.get(name, 0.0) + t - self.t
            self.t = t

    def finish(self):
        if self.on:
            c, w = time.thread_time() - self.c0, time.perf_counter() - self.w0
            f = c / w if 0 < c < w else 1.0
            for k, v in self.item.items():
                self.s[k] = self.s.get(k, 0.0) + v * f


class SpeechAug:
    """The peer's Dataset: item i is a chunk of utterance order[i]."""

    def __init__(self, root, aug, order, seed=0):
        self.root, self.aug, self.order = root, aug, order
        self.speech = FeederLMDB(os.path.join(root, "speech"))
        self.noise = FeederLMDB(os.path.join(root, "noise")) if aug else None
        self.rir = FeederLMDB(os.path.join(root, "rir")) if aug else None
        self.cats = {}
        if aug:
            names = self.noise.labels()
            by_label = {}
            for i in range(len(self.noise)):
                by_label.setdefault(self.noise.get(i)[0], []).append(i)
            for lab, name in names.items():
                if name in CATEGORIES and by_label.get(lab):
                    self.cats[name] = by_label[lab]
            self.noise.env.close()  # reopened lazily: each forked worker its own
            self.noise.env = None
        self.rng = np.random.default_rng(seed)
        self.timer = Timer(False)
        self._speed_sox = None

    def __len__(self):
        return len(self.order)

    # --- the stages -------------------------------------------------------
    def _wave(self, ds, index):
        """Record index of a wave dataset as float32 in [-1, 1]."""
        _, payload, _, _, _ = ds.get(index)
        return np.frombuffer(payload, "<i2").astype(np.float32) / 32768.0

    def _speed(self, x, f):
        import torch
        import torchaudio
        t = torch.from_numpy(x)[None]
        if self._speed_sox:
            y, _ = torchaudio.sox_effects.apply_effects_tensor(
                t, RATE, [["speed", str(f)], ["rate", str(RATE)]])
        else:
            y = torchaudio.functional.resample(t, int(RATE * f), RATE)
        y = y[0].numpy()
        if len(y) < L:
            y = np.pad(y, (0, L - len(y)))
        return y[:L]

    def _reverb(self, x):
        from scipy.signal import fftconvolve
        h = self._wave(self.rir, int(self.rng.integers(len(self.rir))))[:MAX_RIR]
        h = h / np.sqrt(np.sum(h.astype(np.float64) ** 2))
        d = int(np.argmax(np.abs(h)))      # the direct path
        y = fftconvolve(x, h)[d:d + len(x)]
        ex, ey = np.sum(x.astype(np.float64) ** 2), np.sum(y.astype(np.float64) ** 2)
        return (y * math.sqrt(ex / ey)).astype(np.float32) if ey > 0 else y.astype(np.float32)

    def _noise(self, x):
        cat = list(self.cats)[int(self.rng.integers(len(self.cats)))]
        lo, hi = AUG[SNR_KEY[cat]]
        snr = self.rng.uniform(lo, hi)
        parts = int(self.rng.integers(AUG["babble"][0], AUG["babble"][1] + 1)) \
            if cat == "speech" else 1
        acc = np.zeros(len(x), np.float32)
        for _ in range(parts):
            v = self._wave(self.noise, self.cats[cat][int(self.rng.integers(len(self.cats[cat])))])
            off = int(self.rng.integers(len(v)))
            acc += np.take(v, np.arange(off, off + len(x)), mode="wrap")  # looped if short
        ex, ev = np.sum(x.astype(np.float64) ** 2), np.sum(acc.astype(np.float64) ** 2)
        if ex > 0 and ev > 0:
            x = x + acc * np.float32(math.sqrt(ex / (ev * 10 ** (snr / 10))))
        return x

    def __getitem__(self, i):
        import torch
        import torchaudio.compliance.kaldi as kaldi
        tm, rng, aug = self.timer, self.rng, self.aug
        tm.start()
        label, payload, n, _, _ = self.speech.get(int(self.order[i]))
        tm.lap("read")
        f = 1.0
        if aug and rng.random() < AUG["speed_p"]:
            f = 0.9 if rng.random() < 0.5 else 1.1
        span = L if f == 1.0 else int(math.ceil(L * f)) + 2
        off = int(rng.integers(0, n - span + 1)) if n > span else 0
        s = np.frombuffer(payload, "<i2")
        cut = s[off:off + span] if n >= span else np.resize(s, span)  # short: repeated
        x = cut.astype(np.float32) / 32768.0
        tm.lap("chunk")
        if f != 1.0:
            x = self._speed(x, f)
        tm.lap("speed")
        if aug and rng.random() < AUG["reverb_p"]:
            x = self._reverb(x)
        tm.lap("reverb")
        if aug and self.cats and rng.random() < AUG["noise_p"]:
            x = self._noise(x)
        tm.lap("noise")
        w = torch.from_numpy(np.ascontiguousarray(x, np.float32) * 32768.0)[None]
        feats = kaldi.fbank(w, num_mel_bins=BINS, sample_frequency=RATE, low_freq=20,
                            high_freq=-400, energy_floor=0.0,
                            dither=AUG["dither"] if aug else 0.0)
        feats = feats - feats.mean(dim=0, keepdim=True)
        tm.lap("features")
        if aug and rng.random() < AUG["specaug_p"]:
            T, D = feats.shape
            for _ in range(AUG["time_masks"]):
                w_ = int(rng.integers(1, AUG["time_mask_max"] + 1))
                t0 = int(rng.integers(0, T - w_ + 1))
                feats[t0:t0 + w_, :] = 0
            for _ in range(AUG["freq_masks"]):
                w_ = int(rng.integers(1, AUG["freq_mask_max"] + 1))
                f0 = int(rng.integers(0, D - w_ + 1))
                feats[:, f0:f0 + w_] = 0
        out = feats.t().contiguous()  # (80, 200)
        tm.lap("specaug")
        tm.finish()
        return out, label


def speech_aug(a, count, seed=0):
    """The peer's Dataset of count items: passes over the utterances, each
    reshuffled; the speed perturbation decided here (before any fork)."""
    n = len(FeederLMDB(os.path.join(a.datasets, "speech")))
    rng = np.random.default_rng(a.seed)
    passes = [rng.permutation(n) for _ in range((count + n - 1) // n)]
    ds = SpeechAug(a.datasets, a.aug, np.concatenate(passes)[:count], seed)
    ds._speed_sox = sox_works()
    return ds


def _worker_init(_):
    import torch
    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(1000 + info.id)


def peer(a):
    import torch
    from torch.utils.data import DataLoader
    warm = max(a.warmup, 2 * a.workers + 2)  # beyond the workers' prefetch
    ds = speech_aug(a, (warm + a.chunks // a.batch + 1) * a.batch)
    dl = DataLoader(ds, batch_size=a.batch, num_workers=a.workers, drop_last=True,
                    worker_init_fn=_worker_init, prefetch_factor=2)
    it = iter(dl)
    for _ in range(warm):
        x, y = next(it)
    assert tuple(x.shape) == (a.batch, BINS, CHUNK), x.shape
    got, t0 = 0, time.perf_counter()
    while got < a.chunks:
        x, y = next(it)
        got += len(y)
    dt = time.perf_counter() - t0
    del it
    print(json.dumps({"chunks_per_s": round(got / dt, 2), "chunks": got, "seconds": round(dt, 3),
                      "workers": a.workers, "torch": torch.__version__,
                      "speed": "sox" if ds._speed_sox else "resample"}))


def stages(a):
    import torch
    torch.set_num_threads(1)  # as in a DataLoader worker
    warm = 20
    ds = speech_aug(a, warm + a.chunks, seed=7)
    for i in range(warm):
        ds[i]
    ds.timer = Timer(True)
    c0 = time.thread_time()
    batch = []
    tc = 0.0
    for i in range(warm, warm + a.chunks):
        batch.append(ds[i])
        if len(batch) == a.batch:
            t = time.thread_time()
            torch.utils.data.default_collate(batch)
            tc += time.thread_time() - t
            batch = []
    cpu = time.thread_time() - c0
    res = {k + "_ms": round(v * 1e3 / a.chunks, 4) for k, v in ds.timer.s.items()}
    res["collate_ms"] = round(tc * 1e3 / a.chunks, 4)
    res["cpu_ms"] = round(cpu * 1e3 / a.chunks, 4)
    res["chunks_per_s_core"] = round(a.chunks / cpu, 1)
    res["speed"] = "sox" if ds._speed_sox else "resample"
    print(json.dumps(res))


def feeder_side(a):
    import feeder
    opts = dict(AUG, noise="noise", rir="rir") if a.aug else dict(dither=0.0)
    pipe = feeder.Wave(chunk_len=CHUNK, train=True, features="fbank", bins=BINS, cmn="utt",
                       **opts)
    ld = feeder.Loader("speech", a.batch, pipeline=pipe, seed=a.seed, dtype="float32",
                       socket=a.socket, drop_last=True, shuffle=True, slots=a.slots,
                       timeout=120)
    warm = max(a.warmup, a.slots + 2)  # past the batches its ring prefetched
    epoch, got, done, t0 = 0, 0, 0, None
    while t0 is None or got < a.chunks:
        for x, y in ld:
            if t0 is None:
                assert tuple(x.shape) == (a.batch, BINS, CHUNK), x.shape
            done += 1
            if done == warm:
                t0 = time.perf_counter()
            elif t0 is not None:
                got += len(y)
                if got >= a.chunks:
                    break
        epoch += 1
        ld.set_epoch(epoch)
    dt = time.perf_counter() - t0
    ld.close()
    print(json.dumps({"chunks_per_s": round(got / dt, 2), "chunks": got, "seconds": round(dt, 3),
                      "pipeline": repr(pipe)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("peer", "stages", "feeder"))
    ap.add_argument("datasets")
    for k, v in dict(aug=1, chunks=1280, batch=32, workers=os.cpu_count(), slots=4,
                     seed=1).items():
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--warmup", type=int, default=4, help="batches not timed")
    ap.add_argument("--socket", default=None)
    a = ap.parse_args()
    {"peer": peer, "stages": stages, "feeder": feeder_side}[a.mode](a)


if __name__ == "__main__":
    main()
