#!/usr/bin/python3
"""test_gen_speech.py — end-to-end test of tools/gen/gen-speech.

Runs the generator through its wrapper script (as a user would) on a small
corpus and checks the files byte by byte and as signals: canonical WAV
headers, durations within the asked bounds, sane levels without clipping,
silence, voicing and frication all present, byte-identical output for the
same seed (whatever the thread count), different output for another seed,
and stable speaker traits: the median F0 of each utterance, estimated by
autocorrelation, stays near its speaker's drawn F0 and varies less within a
speaker than between speakers. Exit 0 pass, 1 fail, 77 skip."""
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy not available", file=sys.stderr)
    sys.exit(77)

FS = 16000
SPEAKERS, UTTS, MIN_DUR, MAX_DUR, SEED = 3, 4, 1.5, 2.5, 11

source = os.environ.get("FEEDER_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
wrapper = os.path.join(source, "tools", "gen", "gen-speech")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def run(*args):
    return subprocess.run([wrapper, *map(str, args)], capture_output=True, text=True, timeout=60)


def read_wav(path):
    data = open(path, "rb").read()
    check(len(data) >= 44, f"{path}: shorter than a WAV header")
    (riff, riff_size, wave, fmt, fmt_size, tag, channels, rate, byte_rate, align, bits,
     data_id, data_size) = struct.unpack("<4sI4s4sIHHIIHH4sI", data[:44])
    check(riff == b"RIFF" and wave == b"WAVE" and fmt == b"fmt " and data_id == b"data",
          f"{path}: not a canonical RIFF/WAVE file")
    check(riff_size == len(data) - 8, f"{path}: RIFF size {riff_size} != file size - 8")
    check(fmt_size == 16 and tag == 1, f"{path}: fmt chunk is not plain PCM")
    check((channels, rate, bits) == (1, FS, 16), f"{path}: {channels} ch {rate} Hz {bits} bits")
    check(byte_rate == FS * 2 and align == 2, f"{path}: byte rate {byte_rate}, align {align}")
    check(data_size == len(data) - 44, f"{path}: data size {data_size} != file size - 44")
    return np.frombuffer(data[44:], dtype="<i2").astype(np.float64) / 32768.0


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


def read_traits(path):
    lines = open(path).read().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, l.split("\t"))) for l in lines[1:]]


def main():
    exe = os.path.join(os.environ.get("FEEDER_BUILD", os.path.join(source, "build")),
                       "tools", "gen", "gen-speech")
    if not os.access(exe, os.X_OK):
        print(f"{exe} is not built", file=sys.stderr)
        return 77

    # Bad arguments: one line on stderr, exit status 2.
    for bad in ([], [3, 4], [0, 4, "d"], [3, "x", "d"], [3, 4, "d", "--seed", "abc"],
                [3, 4, "d", "--min-dur", 3, "--max-dur", 2], [3, 4, "d", "--bogus"],
                [3, 4, "d", "--max-dur", 0]):
        p = run(*bad)
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and "usage" in p.stderr,
              f"arguments {bad}: exit {p.returncode}, stderr {p.stderr!r}")

    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = (os.path.join(tmp, n) for n in "abc")
        common = ["--seed", SEED, "--min-dur", MIN_DUR, "--max-dur", MAX_DUR]
        for out, extra in ((a, []), (b, ["--threads", 1])):
            p = run(SPEAKERS, UTTS, out, *common, *extra)
            check(p.returncode == 0, f"gen-speech {out}: exit {p.returncode}: {p.stderr}")
        p = run(SPEAKERS, UTTS, c, "--seed", SEED + 1, "--min-dur", MIN_DUR, "--max-dur", MAX_DUR)
        check(p.returncode == 0, f"gen-speech {c}: exit {p.returncode}: {p.stderr}")
        if failures:
            return 1

        traits = read_traits(os.path.join(a, "speakers.tsv"))
        check(len(traits) == SPEAKERS and [t["speaker"] for t in traits] ==
              [f"spk_{s:03d}" for s in range(SPEAKERS)], "speakers.tsv does not list the speakers")
        log_f0 = np.zeros((SPEAKERS, UTTS))
        for s in range(SPEAKERS):
            fric_frames = 0
            for u in range(UTTS):
                rel = os.path.join(f"spk_{s:03d}", f"utt_{u:03d}.wav")
                pa = os.path.join(a, rel)
                raw = open(pa, "rb").read()
                check(raw == open(os.path.join(b, rel), "rb").read(),
                      f"{rel}: differs between 1 thread and many with the same seed")
                check(raw != open(os.path.join(c, rel), "rb").read(),
                      f"{rel}: identical for seeds {SEED} and {SEED + 1}")
                x = read_wav(pa)
                dur = len(x) / FS
                check(MIN_DUR <= dur <= MAX_DUR, f"{rel}: {dur:.3f} s outside [{MIN_DUR}, {MAX_DUR}]")
                rms_db = 20 * np.log10(np.sqrt(np.mean(x ** 2)) + 1e-12)
                check(-40 < rms_db < -12, f"{rel}: RMS {rms_db:.1f} dBFS")
                clipped = np.mean(np.abs(x) >= 32767 / 32768)
                check(clipped < 1e-3, f"{rel}: {clipped:.2%} of samples clipped")

                # Pauses and frication: frame levels span a wide range, and
                # some loud frames have most of their energy above 3 kHz.
                fr = frames(x, 400, 160) * np.hamming(400)
                pw = np.abs(np.fft.rfft(fr, 512, axis=1)) ** 2
                e_db = 10 * np.log10(pw.sum(axis=1) + 1e-12)
                check(e_db.max() - np.percentile(e_db, 5) > 20,
                      f"{rel}: no quiet frames (pauses) 20 dB below the loudest")
                high = pw[:, 96:].sum(axis=1) / (pw.sum(axis=1) + 1e-20)  # bins above 3 kHz
                fric_frames += int(((high > 0.5) & (e_db > e_db.max() - 35)).sum())

                f0 = median_f0(x)
                want = float(traits[s]["f0_hz"])
                check(abs(f0 / want - 1) < 0.2,
                      f"{rel}: median F0 {f0:.1f} Hz, speaker's F0 {want:.1f} Hz")
                log_f0[s, u] = np.log(max(f0, 1.0))
            check(fric_frames >= 3, f"spk_{s:03d}: only {fric_frames} fricative-like frames")

        within = log_f0.std(axis=1).max()
        between = log_f0.mean(axis=1).std()
        print(f"log-F0 spread: within-speaker max {within:.3f}, between-speaker {between:.3f}")
        check(within < between, f"F0 varies more within a speaker ({within:.3f}) "
              f"than between speakers ({between:.3f})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
