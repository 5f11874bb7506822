#!/usr/bin/python3
"""test_gen_rir.py — end-to-end test of tools/gen/gen-rir, the image-source room
impulse response generator (pytest; as a script, one meson test).

Checks: bad arguments, rirs.tsv against the files, canonical WAV headers,
lengths and the 0.9 peak, byte-identical output for a seed whatever the
thread count and different output for another seed, the RT60 of every
response measured here by Schroeder backward integration (T20: the -5 to
-25 dB fit, times 3) within 20 % of its target, and the direct path as the
peak at the delay the room's geometry gives."""
import os
import sys

import gencheck  # its folder is sys.path[0], for the script and for pytest

if __name__ == "__main__":
    sys.exit(gencheck.main(__file__, ["gen-rir"]))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

gencheck.need("gen-rir")

COUNT, SEED = 12, 7
# (name, rate, --rt60, extra arguments)
SETS = [("a", 16000, "0.2:0.9", []), ("b", 16000, "0.2:0.9", ["--threads", 1]),
        ("c", 16000, "0.2:0.9", ["--seed", SEED + 1]), ("short", 8000, "0.1:0.3", []),
        ("long", 16000, "1.0:1.2", [])]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    base = tmp_path_factory.mktemp("gen_rir")
    dirs = {}
    for name, rate, rt60, extra in SETS:
        d = str(base / name)
        args = ["--seed", SEED, *extra] if "--seed" not in extra else extra
        p = gencheck.run("gen-rir", "--count", COUNT, "--rate", rate, "--rt60", rt60, *args, d)
        assert p.returncode == 0, f"gen-rir {name}: exit {p.returncode}: {p.stderr}"
        print(p.stdout.strip())
        dirs[name] = (d, rate, [float(v) for v in rt60.split(":")])
    return dirs


def table(d):
    return gencheck.tsv(os.path.join(d, "rirs.tsv"))


def triple(s, sep=","):
    return [float(v) for v in s.split(sep)]


@pytest.mark.parametrize("bad", [["--count", 0, "d"], ["--rt60", "0.9:0.2", "d"],
                                 ["--rt60", "abc", "d"], ["--rt60", "0.05:0.3", "d"],
                                 ["--rate", 1000, "d"], ["--seed", "x", "d"], ["--bogus", "d"],
                                 []])
def test_bad_arguments(bad):
    gencheck.assert_usage("gen-rir", bad)


def test_table_describes_the_files(out):
    for name, (d, rate, (lo, hi)) in out.items():
        rows = table(d)
        wavs = sorted(f for f in os.listdir(d) if f.endswith(".wav"))
        assert [r["name"] + ".wav" for r in rows] == wavs == \
            [f"rir_{i:04d}.wav" for i in range(COUNT)], f"{name}: {wavs}"
        for r in rows:
            room = triple(r["room_m"], "x")
            assert 3 <= room[0] <= 10 and 3 <= room[1] <= 10 and 2.5 <= room[2] <= 4, r
            for pos in (triple(r["source_m"]), triple(r["receiver_m"])):
                assert all(0 < p < L for p, L in zip(pos, room)), f"{r['name']}: {pos} outside"
            dist = np.linalg.norm(np.subtract(triple(r["source_m"]), triple(r["receiver_m"])))
            assert abs(dist - float(r["distance_m"])) < 0.02, r
            assert lo <= float(r["rt60_target"]) <= hi, r
            assert 0 < float(r["alpha"]) < 1 and 0 < float(r["alpha_sabine"]) < 1, r


def test_wav_headers_lengths_and_peak(out):
    for name, (d, rate, _) in out.items():
        for r in table(d):
            x, _ = gencheck.read_wav(os.path.join(d, r["name"] + ".wav"), rate)
            assert len(x) <= 1.5 * rate + 1, f"{name}/{r['name']}: {len(x) / rate:.3f} s"
            assert abs(len(x) / rate - float(r["length_s"])) < 1e-3
            assert len(x) / rate >= float(r["rt60_target"]), \
                f"{name}/{r['name']}: shorter than its RT60"
            assert abs(np.abs(x).max() - 0.9) < 0.002, f"{name}/{r['name']}: peak {np.abs(x).max()}"


def test_deterministic(out):
    gencheck.assert_deterministic({k: out[k][0] for k in "abc"}, SEED)


def test_rt60_within_20_percent(out):
    worst = (0.0, "")
    for name, (d, rate, _) in out.items():
        for r in table(d):
            x, _ = gencheck.read_wav(os.path.join(d, r["name"] + ".wav"), rate)
            t20 = gencheck.schroeder_t(x, rate, -5, -25)
            t30 = gencheck.schroeder_t(x, rate, -5, -35)
            target = float(r["rt60_target"])
            rel = t20 / target - 1
            print(f"{name}/{r['name']}: target {target:.3f} s, T20 {t20:.3f} s ({rel:+.1%}), "
                  f"T30 {t30:.3f} s ({t30 / target - 1:+.1%}); Sabine's alpha would give "
                  f"{float(r['rt60_sabine_alpha']):.3f} s")
            assert abs(t20 - float(r["rt60_measured"])) < 0.002 + 0.01 * t20, \
                f"{name}/{r['name']}: rirs.tsv says {r['rt60_measured']} s, measured {t20:.4f}"
            if abs(rel) > abs(worst[0]):
                worst = (rel, f"{name}/{r['name']} (target {target:.3f} s, T20 {t20:.3f} s)")
            assert abs(rel) <= 0.20, f"{name}/{r['name']}: T20 {t20:.3f} s, target {target:.3f} s"
    print(f"worst RT60 error: {worst[0]:+.1%} at {worst[1]}")


def test_direct_path_is_the_peak(out):
    for name, (d, rate, _) in out.items():
        for r in table(d):
            x, _ = gencheck.read_wav(os.path.join(d, r["name"] + ".wav"), rate)
            direct = float(r["direct_s"]) * rate
            # Its delay is the source-receiver distance at 343 m/s, moved by
            # under half a sample onto a sample.
            assert abs(direct - float(r["distance_m"]) / 343.0 * rate) <= 0.55, r
            top = int(np.argmax(np.abs(x)))
            assert top == round(direct), f"{name}/{r['name']}: peak at {top}, direct {direct:.1f}"
            # Nothing arrives before it but the kernel's pre-ringing (8 taps).
            early = np.abs(x[: max(0, top - 8)])
            assert early.size == 0 or early.max() < 1e-3, f"{name}/{r['name']}: sound before it"
