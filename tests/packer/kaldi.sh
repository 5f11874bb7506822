#!/bin/bash
# kaldi.sh — `packer pack audio --kaldi` end to end on a Kaldi data directory
# that gen-speech --kaldi writes beside its speaker tree (wav.scp with plain
# paths and one "cat ... |" pipe, utt2spk, segments cutting utterances out
# of longer recordings, utt2dur): every utterance's waveform equals the same
# utterance packed from the tree (segments cut at the right samples; whole
# files up to the last 10 ms Kaldi's two-decimal times keep), the speakers
# are the classes and the utterance ids the names; a pipe without
# --allow-pipes and a bad line are refused (exit 2) with the file and line;
# FLAC copies of the tree give the same samples as its WAVs; and packer cat
# writes a wave record back as a WAV.
. "$FEEDER_SOURCE/tests/packer/fixture.sh"
need_python lmdb numpy PIL
need_exe "$genspeech"
need_audio
"$genspeech" 3 4 "$tmp/tree" --seed 11 --min-dur 1 --max-dur 2 --kaldi "$tmp/data" >/dev/null || fail "gen-speech --kaldi"
grep -q ' |$' "$tmp/data/wav.scp" || fail "no pipe in wav.scp"

expect_rc 2 "$packer" pack audio --kaldi --store wave "$tmp/data" "$tmp/nopipe"
has "commands run only with --allow-pipes"
expect_rc 0 "$packer" pack audio --kaldi --allow-pipes --store wave "$tmp/data" "$tmp/k"
expect_rc 0 "$packer" pack audio --store wave "$tmp/tree" "$tmp/t"
expect_rc 0 "$packer" verify "$tmp/k"

# FLAC copies of the tree (where the flac tool is installed).
flacs=0
if command -v flac >/dev/null; then
  cp -r "$tmp/tree" "$tmp/ftree"
  for f in "$tmp"/ftree/*/*.wav; do flac -s --delete-input-file "$f" -o "${f%.wav}.flac" || fail "flac $f"; done
  expect_rc 0 "$packer" pack audio --store wave "$tmp/ftree" "$tmp/f"
  flacs=1
fi

expect_rc 0 "$packer" cat "$tmp/k" 0
"$py" - "$tmp" "$flacs" "$tmp/out" <<'PYEOF' || fail "kaldi vs tree"
import os, sys, wave
sys.path.insert(0, os.path.join(os.environ["FEEDER_SOURCE"], "tests", "bench"))
import numpy as np
from feeder_lmdb import FeederLMDB
import lmdb, struct
T, flacs = sys.argv[1], sys.argv[2] == "1"
# packer cat of a wave record is a WAV of its samples.
w = wave.open(sys.argv[3], "rb")
assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getframerate() == 16000
x = np.frombuffer(w.readframes(w.getnframes()), "<i2")
assert np.array_equal(x, np.frombuffer(FeederLMDB(T + "/k").get(0)[1], "<i2")), "cat as WAV"
def records(path):  # {name: (speaker, samples)}
    d = FeederLMDB(path)
    classes = d.labels()
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=8)
    out = {}
    with env.begin(db=env.open_db(b"names", create=False)) as txn:
        for i in range(len(d)):
            label, payload = d.get(i)[:2]
            out[txn.get(struct.pack(">Q", i)).decode()] = (classes[label], np.frombuffer(payload, "<i2"))
    return out
k, t = records(T + "/k"), records(T + "/t")
utt2spk = dict(l.split() for l in open(T + "/data/utt2spk"))
seg = {l.split()[0]: l.split()[1] for l in open(T + "/data/segments")}
assert sorted(k) == sorted(utt2spk), (sorted(k), sorted(utt2spk))
cut = 0
for utt, (spk, x) in k.items():
    assert spk == utt2spk[utt], (utt, spk)
    s, u = utt.split("-")
    tspk, y = t["%s/%s.wav" % (s, u)]
    assert tspk == spk
    n = min(len(x), len(y))
    assert np.array_equal(x[:n], y[:n]), utt
    # A segment of a longer recording is padded to 10 ms with zeros; a whole
    # file is cut at its last whole 10 ms: either way less than 160 samples.
    assert abs(len(x) - len(y)) < 160 and not x[n:].any(), (utt, len(x), len(y))
    cut += seg[utt] != utt
assert cut >= 3, "no utterance came from a longer recording (%d)" % cut
if flacs:
    f = records(T + "/f")
    for name, (spk, y) in t.items():
        fspk, z = f[name[:-4] + ".flac"]
        assert fspk == spk and np.array_equal(y, z), name
print("kaldi: %d utterances, %d cut from longer recordings, all equal to the tree's%s"
      % (len(k), cut, ", FLAC too" if flacs else ""))
PYEOF

# --order shuffled: the recordings in a seeded order, each with its
# utterances together; the same records as the walk's, named in the header.
expect_rc 0 "$packer" pack audio --kaldi --allow-pipes --store wave --order shuffled --order-seed 3 \
	"$tmp/data" "$tmp/ks"
expect_rc 0 "$packer" verify "$tmp/ks"
expect_rc 0 "$packer" inspect "$tmp/ks"
grep -q "options: .* order=shuffled order-seed=3$" "$tmp/out" || fail "ks options: $(cat "$tmp/out")"
for d in k ks; do "$py" "$here/dsread.py" "$tmp/$d" >"$tmp/$d.json" || fail "dsread $d"; done
"$py" - "$tmp/k.json" "$tmp/ks.json" "$tmp/data/segments" <<'PYEOF' || fail "kaldi --order shuffled"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
key = lambda j: [(s["name"], s["label"], s["crc"], s["len"]) for s in j["samples"]]
assert sorted(key(a)) == sorted(key(b)) and key(a) != key(b), "not a permutation"
reco = {l.split()[0]: l.split()[1] for l in open(sys.argv[3])}
runs = [reco[s["name"]] for s in b["samples"]]
runs = [r for i, r in enumerate(runs) if i == 0 or runs[i - 1] != r]
assert len(runs) == len(set(runs)), "a recording's utterances are apart: %s" % runs
PYEOF

# edited NAME FILE SED: $tmp/NAME, a copy of the data directory, SED on FILE.
edited() { cp -r "$tmp/data" "$tmp/$1" && sed -i "$3" "$tmp/$1/$2" || fail "editing $1/$2"; }
# A bad line: the file and its line number, exit 2, no dataset.
edited bad utt2spk '2s/ .*//'
expect_rc 2 "$packer" pack audio --kaldi --allow-pipes "$tmp/bad" "$tmp/b"
has "bad/utt2spk:2: "
no_dest "$tmp/b"
# Speakers are the label table, which is UTF-8: a Latin-1 name is refused
# with its file and line; a UTF-8 one comes out of inspect --json as it is.
edited latin1 utt2spk '2s/$/\xe9/'
expect_rc 2 "$packer" pack audio --kaldi --allow-pipes --store wave "$tmp/latin1" "$tmp/l1"
has "latin1/utt2spk:2: the speaker is not UTF-8"
no_dest "$tmp/l1"
edited utf8 utt2spk '2s/$/-Jos\xc3\xa9/'
spk=$(sed -n '2s/.* //p' "$tmp/utf8/utt2spk")
expect_rc 0 "$packer" pack audio --kaldi --allow-pipes --store wave "$tmp/utf8" "$tmp/u8"
expect_rc 0 "$packer" inspect --json "$tmp/u8"
"$py" -c 'import json, sys; d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"));
assert sys.argv[2] in d["labels"], d["labels"]' "$tmp/out" "$spk" || fail "inspect --json: $(cat "$tmp/out")"
# A pipe that fails: its recording is named and skipped (fatal with --strict).
edited badpipe wav.scp 's/ cat \(.*\) |$/ false \1 |/'
expect_rc 0 "$packer" pack audio --kaldi --allow-pipes --store wave "$tmp/badpipe" "$tmp/bp"
has "exited with status 1"
expect_rc 2 "$packer" pack audio --kaldi --allow-pipes --strict --store wave "$tmp/badpipe" "$tmp/bp2"

echo "kaldi: ok"
