#!/usr/bin/python3
"""test_gen_speech_kaldi.py — the Kaldi data directory of gen-speech --kaldi
(pytest; as a script, one meson test).

Checks: the files Kaldi expects, each sorted bytewise with unique keys;
every wav.scp entry an existing absolute path or the one pipe, which yields
the file; utt2spk covering every utterance of the corpus with speaker-
prefixed ids, spk2utt its inverse; segments lying inside their recordings,
in Kaldi's two-decimal seconds, and cutting exactly the utterance's samples
from them; utt2dur and reco2dur agreeing with segments and the files; and
the speaker-folder corpus unchanged by --kaldi."""
import os
import re
import subprocess
import sys

import gencheck  # its folder is sys.path[0], for the script and for pytest

if __name__ == "__main__":
    sys.exit(gencheck.main(__file__, ["gen-speech"]))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

gencheck.need("gen-speech")

SPEAKERS, UTTS, SEED, FS = 3, 5, 4, 16000
FILES = ("wav.scp", "segments", "utt2spk", "spk2utt", "utt2dur", "reco2dur")
TIME = re.compile(r"^\d+\.\d\d$")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    base = tmp_path_factory.mktemp("kaldi")
    corpus, kdir, plain = (str(base / n) for n in ("corpus", "data", "plain"))
    common = ["--seed", SEED, "--min-dur", 1, "--max-dur", 2]
    p = gencheck.run("gen-speech", SPEAKERS, UTTS, corpus, *common, "--kaldi", kdir)
    assert p.returncode == 0, p.stderr
    p = gencheck.run("gen-speech", SPEAKERS, UTTS, plain, *common)
    assert p.returncode == 0, p.stderr
    return corpus, kdir, plain


def lines(kdir, name):
    return [l.split() for l in open(os.path.join(kdir, name)).read().splitlines()]


def utterances(corpus):
    return sorted(f"{s}-{u[:-4]}" for s in os.listdir(corpus) if s.startswith("spk_")
                  for u in os.listdir(os.path.join(corpus, s)) if u.endswith(".wav"))


def wav_sources(kdir):
    """reco -> (path, is_pipe)"""
    src = {}
    for f in lines(kdir, "wav.scp"):
        if f[-1] == "|":
            assert f[1:-2] == ["cat"] and len(f) == 4, f"unexpected pipe {f}"
            src[f[0]] = (f[2], True)
        else:
            assert len(f) == 2, f"wav.scp line {f}"
            src[f[0]] = (f[1], False)
    return src


def test_files_sorted_with_unique_keys(out):
    _, kdir, _ = out
    for name in FILES:
        raw = open(os.path.join(kdir, name), "rb").read()
        assert raw.endswith(b"\n") and b"\n\n" not in raw and b"\r" not in raw, name
        keys = [l.split(b" ")[0] for l in raw.splitlines()]
        assert keys == sorted(keys), f"{name} is not sorted bytewise"
        assert len(set(keys)) == len(keys), f"{name} repeats a key"
    assert not [f for f in os.listdir(kdir) if f.endswith(".tmp")]


def test_wav_scp_entries_exist(out):
    _, kdir, _ = out
    src = wav_sources(kdir)
    pipes = [r for r, (_, pipe) in src.items() if pipe]
    assert len(pipes) == 1, f"pipes: {pipes}"
    for reco, (path, pipe) in src.items():
        assert os.path.isabs(path) and os.path.isfile(path), f"{reco}: {path}"
        gencheck.read_wav(path, FS)
    for line in open(os.path.join(kdir, "wav.scp")).read().splitlines():
        reco, rest = line.split(" ", 1)
        if rest.endswith("|"):  # what Kaldi does with it: run it, read its stdout
            piped = subprocess.run(rest[:-1], shell=True, capture_output=True, check=True)
            assert piped.stdout == open(src[reco][0], "rb").read(), "the pipe is not its file"


def test_utt2spk_covers_every_utterance(out):
    corpus, kdir, _ = out
    utt2spk = dict(lines(kdir, "utt2spk"))
    assert sorted(utt2spk) == utterances(corpus)
    assert len(utt2spk) == SPEAKERS * UTTS
    for utt, spk in utt2spk.items():
        assert utt.startswith(spk + "-"), f"{utt} is not prefixed by its speaker {spk}"
    spk2utt = {l[0]: l[1:] for l in lines(kdir, "spk2utt")}
    assert spk2utt == {s: sorted(u for u, v in utt2spk.items() if v == s)
                       for s in set(utt2spk.values())}
    for name in ("segments", "utt2dur"):
        assert sorted(l[0] for l in lines(kdir, name)) == sorted(utt2spk), name


def test_segments_lie_inside_their_recordings(out):
    _, kdir, _ = out
    src = wav_sources(kdir)
    used = set()
    multi = {}
    for utt, reco, start, end in lines(kdir, "segments"):
        assert TIME.match(start) and TIME.match(end), f"{utt}: times {start} {end}"
        assert reco in src, f"{utt}: recording {reco} not in wav.scp"
        x, _ = gencheck.read_wav(src[reco][0], FS)
        assert 0 <= float(start) < float(end) <= len(x) / FS, \
            f"{utt}: [{start}, {end}] outside {reco} of {len(x) / FS:.3f} s"
        used.add(reco)
        multi[reco] = multi.get(reco, 0) + 1
    assert used == set(src), f"recordings without segments: {set(src) - used}"
    assert sum(n >= 2 for n in multi.values()) == SPEAKERS, \
        f"expected one multi-utterance recording per speaker: {multi}"


def test_segments_cut_the_utterances(out):
    corpus, kdir, _ = out
    src = wav_sources(kdir)
    for utt, reco, start, end in lines(kdir, "segments"):
        spk, u = utt.split("-")
        orig, _ = gencheck.read_wav(os.path.join(corpus, spk, u + ".wav"), FS)
        rec, _ = gencheck.read_wav(src[reco][0], FS)
        a, b = round(float(start) * FS), round(float(end) * FS)
        cut = rec[a:b]
        n = min(len(orig), len(cut))
        assert len(orig) - len(cut) < FS // 100, f"{utt}: segment drops more than 10 ms"
        assert len(cut) - len(orig) < FS // 100, f"{utt}: segment adds more than 10 ms"
        assert np.array_equal(cut[:n], orig[:n]), f"{utt}: segment is not the utterance"
        assert not cut[n:].any(), f"{utt}: segment runs into other speech"
        if reco != utt:  # inside a recording: silence around it
            assert not rec[max(0, a - FS // 10):a].any(), f"{utt}: no silence before it"


def test_durations(out):
    _, kdir, _ = out
    seg = {l[0]: float(l[3]) - float(l[2]) for l in lines(kdir, "segments")}
    for utt, dur in lines(kdir, "utt2dur"):
        assert TIME.match(dur) and abs(float(dur) - seg[utt]) < 0.005, f"{utt}: {dur}"
    src = wav_sources(kdir)
    for reco, dur in lines(kdir, "reco2dur"):
        x, _ = gencheck.read_wav(src[reco][0], FS)
        assert abs(float(dur) - len(x) / FS) < 1e-6, f"{reco}: {dur} s, file {len(x) / FS} s"


def test_corpus_unchanged_by_kaldi(out):
    corpus, _, plain = out
    assert gencheck.files(corpus) == gencheck.files(plain)
    for f in gencheck.files(plain):
        assert open(os.path.join(plain, f), "rb").read() == \
            open(os.path.join(corpus, f), "rb").read(), f


def test_refuses_a_path_with_spaces(tmp_path):
    p = gencheck.run("gen-speech", 1, 1, tmp_path / "a b", "--min-dur", 0.2, "--max-dur", 0.2,
                     "--kaldi", tmp_path / "k")
    assert p.returncode == 1 and "white space" in p.stderr, p.stderr
