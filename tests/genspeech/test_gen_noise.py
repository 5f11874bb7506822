#!/usr/bin/python3
"""test_gen_noise.py — end-to-end test of tools/gen/gen-noise, the MUSAN-like
noise, music and babble generator (pytest; as a script, one meson test).

Checks: bad arguments, the folder layout and ANNOTATIONS, canonical WAV
headers, durations and peaks, byte-identical output for a seed whatever the
thread count and different output for another seed, the --rate option, the
spectral slopes of white, pink and brown noise, the harmonic peaks of the
music on an A440 equal-tempered grid, pauses in the babble speech, and that
babble speakers are not gen-speech's training speakers for the same seed."""
import os
import sys

import gencheck  # its folder is sys.path[0], for the script and for pytest

if __name__ == "__main__":
    sys.exit(gencheck.main(__file__, ["gen-noise", "gen-speech"]))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.signal import find_peaks, welch  # noqa: E402

gencheck.need("gen-noise")

COUNT, SEED, FS = 6, 5, 16000
CATS = ("noise", "music", "speech")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return gencheck.seed_runs(str(tmp_path_factory.mktemp("gen_noise")), "gen-noise", "--count",
                              COUNT, "--seconds", "2:3", seed=SEED)


def notes(d, cat):
    """ANNOTATIONS of a category: name -> the rest of its fields."""
    lines = open(os.path.join(d, cat, "ANNOTATIONS")).read().splitlines()
    return {l.split()[0]: l.split()[1:] for l in lines}


def kinds(d):
    return {name: f[0] for name, f in notes(d, "noise").items()}


@pytest.mark.parametrize("bad", [["--count", 0, "d"], ["--count", "x", "d"],
                                 ["--seconds", "3:2", "d"], ["--seconds", "0:2", "d"],
                                 ["--seconds", "2", "d"], ["--rate", 1000, "d"],
                                 ["--seed", "-1", "d"], ["--bogus", "d"], [], ["d", "e"]])
def test_bad_arguments(bad):
    gencheck.assert_usage("gen-noise", bad)


def test_every_category_has_its_files(out):
    for cat in CATS:
        names = sorted(f for f in os.listdir(os.path.join(out["a"], cat)) if f.endswith(".wav"))
        assert names == [f"{cat}-synth-{i:04d}.wav" for i in range(COUNT)], f"{cat}: {names}"
        assert sorted(notes(out["a"], cat)) == [n[:-4] for n in names], \
            f"{cat}/ANNOTATIONS does not list its files"
        assert not [f for f in os.listdir(os.path.join(out["a"], cat)) if f.endswith(".tmp")]
    # Kaldi's make_musan.py reads name, genre, vocals (Y/N), musician.
    for fields in notes(out["a"], "music").values():
        assert fields[1] == "N" and len(fields) >= 3
    assert sorted(set(kinds(out["a"]).values())) == sorted(
        ["white", "pink", "brown", "hum", "fan", "band"])


def test_wav_headers_durations_and_levels(out):
    for cat in CATS:
        for i in range(COUNT):
            path = os.path.join(out["a"], cat, f"{cat}-synth-{i:04d}.wav")
            x, _ = gencheck.read_wav(path, FS)
            assert 2.0 <= len(x) / FS <= 3.0, f"{path}: {len(x) / FS:.3f} s"
            peak_db = 20 * np.log10(np.abs(x).max())
            assert -9.0 < peak_db < -3.0, f"{path}: peak {peak_db:.1f} dBFS"
            rms_db = 10 * np.log10(np.mean(x ** 2))
            assert rms_db > -45, f"{path}: RMS {rms_db:.1f} dBFS, nearly silent"


def test_deterministic(out):
    gencheck.assert_deterministic(out, SEED)


def test_rate(tmp_path):
    p = gencheck.run("gen-noise", "--count", 1, "--seconds", "1:1", "--rate", 22050, tmp_path)
    assert p.returncode == 0, p.stderr
    for cat in CATS:
        x, _ = gencheck.read_wav(str(tmp_path / cat / f"{cat}-synth-0000.wav"), 22050)
        assert len(x) == 22050


def slope_db_per_decade(x, lo=50.0, hi=4000.0):
    f, p = welch(x, FS, nperseg=4096)
    m = (f >= lo) & (f <= hi)
    return np.polyfit(np.log10(f[m]), 10 * np.log10(p[m]), 1)[0]


def test_noise_colours(out):
    want = {"white": (0.0, 1.0), "pink": (-10.0, 1.0), "brown": (-20.0, 2.0)}
    for d in (out["a"], out["c"]):
        for name, kind in kinds(d).items():
            if kind not in want:
                continue
            x, _ = gencheck.read_wav(os.path.join(d, "noise", name + ".wav"), FS)
            s = slope_db_per_decade(x)
            print(f"{name} ({kind}): {s:.2f} dB/decade")
            target, tol = want[kind]
            assert abs(s - target) < tol, f"{name} ({kind}): slope {s:.2f} dB/decade"


def test_music_has_harmonic_peaks(out):
    """Tonal: a spectrum far from flat whose strongest peaks lie on
    harmonics 1, 2, 3, 4, 6 or 8 of A440 equal-tempered notes (within 5 cents;
    those harmonics are themselves within 2 cents of the grid)."""
    for i in range(COUNT):
        x, _ = gencheck.read_wav(os.path.join(out["a"], "music", f"music-synth-{i:04d}.wav"), FS)
        f, p = welch(x, FS, nperseg=16384)
        band = (f >= 100) & (f <= 4000)
        flatness = np.exp(np.mean(np.log(p[band] + 1e-30))) / np.mean(p[band])
        assert flatness < 0.05, f"music {i}: spectral flatness {flatness:.3f}, not tonal"
        peaks, _ = find_peaks(np.where(band, p, 0.0), distance=8)
        top = peaks[np.argsort(p[peaks])[::-1][:8]]
        on_grid = 0
        for k in top:
            a, b, c = np.log(p[k - 1:k + 2])
            fk = (k + 0.5 * (a - c) / (a - 2 * b + c)) * FS / 16384
            cents = min(abs(1200 * np.log2(fk / (h * 440.0)) -
                            100 * round(12 * np.log2(fk / (h * 440.0))))
                        for h in (1, 2, 3, 4, 6, 8))
            on_grid += cents < 5
        print(f"music {i}: flatness {flatness:.4f}, {on_grid}/8 strongest peaks on the grid")
        assert on_grid >= 6, f"music {i}: only {on_grid} of the 8 strongest peaks are harmonic"


def test_babble_speech(out, tmp_path):
    # Speech has pauses: frame levels span a wide range.
    for i in range(COUNT):
        x, _ = gencheck.read_wav(os.path.join(out["a"], "speech", f"speech-synth-{i:04d}.wav"), FS)
        fr = x[: len(x) // 400 * 400].reshape(-1, 400)
        e_db = 10 * np.log10((fr ** 2).mean(axis=1) + 1e-12)
        assert e_db.max() - np.percentile(e_db, 5) > 20, f"speech {i}: no pauses"
    # Not gen-speech's training speakers of the same seed: no voice shares
    # both its F0 and its tract length with one of them.
    p = gencheck.run("gen-speech", 50, 1, tmp_path / "train", "--seed", SEED,
                     "--min-dur", 0.2, "--max-dur", 0.2)
    assert p.returncode == 0, p.stderr
    train = {(round(float(r["f0_hz"]), 1), round(float(r["vtl_scale"]), 3))
             for r in gencheck.tsv(tmp_path / "train" / "speakers.tsv")}
    babble = set()
    for fields in notes(out["a"], "speech").values():
        kv = dict(f.split("=") for f in fields if "=" in f)
        babble.add((float(kv["f0"].rstrip("Hz")), float(kv["vtl"])))
    assert len(babble) == COUNT, "babble files share a speaker"
    assert not babble & train, f"babble speakers among the training speakers: {babble & train}"
