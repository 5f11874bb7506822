#!/usr/bin/python3
"""test_gen_speech.py — end-to-end test of tools/gen/gen-speech (pytest; as a
script, one meson test).

Runs the generator through its wrapper script (as a user would) on a small
corpus and checks the files byte by byte and as signals: canonical WAV
headers, durations within the asked bounds, sane levels without clipping,
silence, voicing and frication all present, byte-identical output for the
same seed (whatever the thread count), different output for another seed,
and stable speaker traits: the median F0 of each utterance, estimated by
autocorrelation, stays near its speaker's drawn F0 and varies less within a
speaker than between speakers."""
import os
import sys

import gencheck  # its folder is sys.path[0], for the script and for pytest

if __name__ == "__main__":
    sys.exit(gencheck.main(__file__, ["gen-speech"], modules=["numpy"]))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

gencheck.need("gen-speech")

FS = 16000
SPEAKERS, UTTS, MIN_DUR, MAX_DUR, SEED = 3, 4, 1.5, 2.5, 11


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return gencheck.seed_runs(str(tmp_path_factory.mktemp("gen_speech")), "gen-speech", SPEAKERS,
                              UTTS, "--min-dur", MIN_DUR, "--max-dur", MAX_DUR, seed=SEED)


@pytest.fixture(scope="module")
def traits(out):
    return gencheck.tsv(os.path.join(out["a"], "speakers.tsv"))


def utterances(out, s):
    """Speaker s's utterances in folder a, as (name, samples)."""
    for u in range(UTTS):
        rel = os.path.join(f"spk_{s:03d}", f"utt_{u:03d}.wav")
        yield rel, gencheck.read_wav(os.path.join(out["a"], rel), FS)[0]


def frames(x, length, hop):
    n = 1 + (len(x) - length) // hop
    idx = np.arange(length)[None, :] + hop * np.arange(n)[:, None]
    return x[idx]


def median_f0(x):
    """Median F0 (Hz) of the loud, clearly periodic 40 ms frames."""
    fr = frames(x, 640, 160)
    fr = (fr - fr.mean(axis=1, keepdims=True)) * np.hanning(640)
    energy = np.sqrt((fr ** 2).mean(axis=1))
    spec = np.fft.rfft(fr, 2048, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, axis=1)[:, :640]
    lo, hi = FS // 400, FS // 60
    f0s = []
    for k in np.nonzero(energy > 0.3 * energy.max())[0]:
        lag = lo + int(np.argmax(ac[k, lo:hi]))
        if ac[k, lag] > 0.5 * ac[k, 0]:
            f0s.append(FS / lag)
    return float(np.median(f0s)) if len(f0s) >= 10 else 0.0


@pytest.mark.parametrize("bad", [[], [3, 4], [0, 4, "d"], [3, "x", "d"],
                                 [3, 4, "d", "--seed", "abc"],
                                 [3, 4, "d", "--min-dur", 3, "--max-dur", 2],
                                 [3, 4, "d", "--bogus"], [3, 4, "d", "--max-dur", 0]])
def test_bad_arguments(bad):
    gencheck.assert_usage("gen-speech", bad)


def test_deterministic(out):
    gencheck.assert_deterministic(out, SEED)


def test_durations_levels_pauses_and_frication(out, traits):
    assert [t["speaker"] for t in traits] == [f"spk_{s:03d}" for s in range(SPEAKERS)], \
        "speakers.tsv does not list the speakers"
    for s in range(SPEAKERS):
        fric_frames = 0
        for rel, x in utterances(out, s):
            dur = len(x) / FS
            assert MIN_DUR <= dur <= MAX_DUR, f"{rel}: {dur:.3f} s outside [{MIN_DUR}, {MAX_DUR}]"
            rms_db = 20 * np.log10(np.sqrt(np.mean(x ** 2)) + 1e-12)
            assert -40 < rms_db < -12, f"{rel}: RMS {rms_db:.1f} dBFS"
            clipped = np.mean(np.abs(x) >= 32767 / 32768)
            assert clipped < 1e-3, f"{rel}: {clipped:.2%} of samples clipped"
            # Pauses and frication: frame levels span a wide range, and some
            # loud frames have most of their energy above 3 kHz.
            fr = frames(x, 400, 160) * np.hamming(400)
            pw = np.abs(np.fft.rfft(fr, 512, axis=1)) ** 2
            e_db = 10 * np.log10(pw.sum(axis=1) + 1e-12)
            assert e_db.max() - np.percentile(e_db, 5) > 20, \
                f"{rel}: no quiet frames (pauses) 20 dB below the loudest"
            high = pw[:, 96:].sum(axis=1) / (pw.sum(axis=1) + 1e-20)  # bins above 3 kHz
            fric_frames += int(((high > 0.5) & (e_db > e_db.max() - 35)).sum())
        assert fric_frames >= 3, f"spk_{s:03d}: only {fric_frames} fricative-like frames"


def test_f0_is_the_speakers(out, traits):
    log_f0 = np.zeros((SPEAKERS, UTTS))
    for s in range(SPEAKERS):
        want = float(traits[s]["f0_hz"])
        for u, (rel, x) in enumerate(utterances(out, s)):
            f0 = median_f0(x)
            assert abs(f0 / want - 1) < 0.2, f"{rel}: median F0 {f0:.1f} Hz, speaker's {want:.1f} Hz"
            log_f0[s, u] = np.log(max(f0, 1.0))
    within = log_f0.std(axis=1).max()
    between = log_f0.mean(axis=1).std()
    print(f"log-F0 spread: within-speaker max {within:.3f}, between-speaker {between:.3f}")
    assert within < between, \
        f"F0 varies more within a speaker ({within:.3f}) than between speakers ({between:.3f})"
