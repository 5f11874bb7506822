"""test_dsp_numpy.py — the daemon's reverberation and noise mixing (the
functions media/reverb.c and media/augment.c that daemon/wave_pipeline.c
calls) against numpy, on the project's generated audio: gen-rir's image-source
RIRs, gen-speech's utterances, gen-noise's noise, music and babble speech.

The C side runs through the test executables' file modes (`test_reverb
apply`, `test_augment mix`: raw float32 in and out), so what is checked is the
library code itself, not a copy of it.
- Reverberation: numpy.convolve in float64 of the chunk with the RIR at unit
  energy, aligned on its largest tap, cut to the chunk and rescaled to the
  chunk's energy (reverb.h's definition): max |difference| <= 1e-4 of the
  output's peak.
- Noise: the SNR measured by numpy on the mixed chunk (energy of the chunk
  over energy of what was added) within 0.1 dB of the one asked for, the noise
  looped or cut from an offset as augment.h says."""
import glob
import os
import wave as wavmod

import numpy as np
import pytest

from conftest import run, tool

L = (200 - 1) * 160 + 400  # samples of a 200-frame chunk


def _read_wav(path):
    with wavmod.open(path, "rb") as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)


@pytest.fixture(scope="module")
def audio(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("dsp"))
    run(tool("tools/gen/gen-speech"), "3", "2", os.path.join(root, "speech"), "--seed", "11",
        "--min-dur", "2.5", "--max-dur", "3.5")
    run(tool("tools/gen/gen-noise"), "--seed", "5", "--count", "2", "--seconds", "1:4",
        os.path.join(root, "noise"))
    run(tool("tools/gen/gen-rir"), "--seed", "6", "--count", "6", os.path.join(root, "rir"))
    found = lambda pattern: sorted(glob.glob(os.path.join(root, pattern), recursive=True))
    a = {"root": root,
         "speech": [_read_wav(p) for p in found("speech/**/*.wav")],
         "noise": [_read_wav(p) for p in found("noise/**/*.wav")],
         "rir": [_read_wav(p) for p in found("rir/*.wav")]}
    assert a["speech"] and a["noise"] and len(a["rir"]) == 6
    return a


def _f32(path, x):
    np.asarray(x, "<f4").tofile(path)
    return path


def _reverb_numpy(x, h):
    h = h / np.sqrt(np.sum(h * h))
    d = int(np.argmax(np.abs(h)))  # the first largest tap
    y = np.convolve(x, h)[d:d + len(x)]
    ey = np.sum(y * y)
    return y * np.sqrt(np.sum(x * x) / ey) if ey > 0 else y


def test_reverb_equals_numpy_convolution(audio, tmp_path):
    exe = tool("tests/features/test_reverb")
    worst = 0.0
    speech = audio["speech"]
    cases = [(speech[i % len(speech)][:L], h) for i, h in enumerate(audio["rir"])]
    # Edges: an RIR longer than the chunk, a one-tap RIR, a short chunk.
    cases += [(speech[0][:4000], audio["rir"][0]), (speech[1][:L], np.array([0.0, 0.0, 3.0, 0.0])),
              (speech[2][:401], audio["rir"][1][:3000])]
    for k, (x, h) in enumerate(cases):
        x32, h32 = x.astype(np.float32), h.astype(np.float32)
        out = str(tmp_path / ("y%d" % k))
        run(exe, "apply", _f32(str(tmp_path / ("x%d" % k)), x32),
            _f32(str(tmp_path / ("h%d" % k)), h32), out)
        y = np.fromfile(out, "<f4").astype(np.float64)
        ref = _reverb_numpy(x32.astype(np.float64), h32.astype(np.float64))
        assert y.shape == ref.shape
        err = np.max(np.abs(y - ref)) / np.max(np.abs(ref))
        assert err <= 1e-4, "case %d (chunk %d, RIR %d): error %.3g of the peak" % (
            k, len(x), len(h), err)
        worst = max(worst, err)
    print("reverb vs numpy.convolve: worst max|diff| %.3g of the output's peak over %d "
          "cases" % (worst, len(cases)))


def test_noise_snr_measured_by_numpy(audio, tmp_path):
    exe = tool("tests/features/test_augment")
    rng = np.random.default_rng(1)
    worst = 0.0
    cases = 0
    for x in audio["speech"]:
        x = x[:L].astype(np.float32)
        for v in audio["noise"]:
            v = v.astype(np.float32)
            snr = float(rng.uniform(0, 20))
            offset = int(rng.integers(0, 2 * len(v)))  # past the end: taken mod len
            out = str(tmp_path / "y")
            run(exe, "mix", _f32(str(tmp_path / "x"), x), _f32(str(tmp_path / "v"), v),
                str(offset), repr(snr), out)
            y = np.fromfile(out, "<f4").astype(np.float64)
            added = y - x.astype(np.float64)
            # What augment.h says was added: the noise looped from offset.
            seg = v[(offset + np.arange(len(x))) % len(v)].astype(np.float64)
            g = np.dot(added, seg) / np.dot(seg, seg)
            assert np.max(np.abs(added - g * seg)) <= 1e-3 * np.max(np.abs(y)), \
                "the added signal is not the noise segment from offset %d" % offset
            measured = 10 * np.log10(np.sum(x.astype(np.float64) ** 2) / np.sum(added ** 2))
            assert abs(measured - snr) <= 0.1, "asked %.3f dB, measured %.3f dB" % (snr, measured)
            worst = max(worst, abs(measured - snr))
            cases += 1
    print("noise SNR measured by numpy: worst |measured - asked| %.4f dB over %d mixes"
          % (worst, cases))
