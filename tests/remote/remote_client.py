"""remote_client.py — the remote-dataset tests' client: feeder.Loader,
unchanged, reading a dataset that feederd serves from object storage, held
to the same photos served from one local data.mdb.

    remote_client.py serve SOCKET FEEDERCTL MANIFEST BLOCK
        the content and order checks of serve.sh (see there)
    remote_client.py epochs SOCKET DATASET N [--train] [--like LOCAL]
        N epochs, each a permutation of the dataset; with --like, each
        sample's label and pixels those of LOCAL's for its index; with
        --train a tiny NumPy softmax regression steps on every batch and its
        loss must stay finite (loader_xvec.sh, where PyTorch may be missing)

A sample is told apart by (dataset index, label, SHA-1 of its tensor): the
augmentation is a function of (seed, epoch, index) only, so the remote
dataset's sample i must have the bytes that the local one gives for i.
"""
import hashlib
import json
import subprocess
import sys

import numpy as np

import feeder

SIZE = 32
BATCH = 16


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def loader(sock, dataset, **kw):
    kw.setdefault("batch_size", BATCH)
    return feeder.Loader(dataset, pipeline=feeder.Jpeg(SIZE), dtype="uint8", socket=sock,
                         return_index=True, timeout=120, **kw)


def run(ld, epochs=None, batches=None):
    """[(index, label, hash)] of each epoch of epochs (one list per epoch),
    or of this Loader's current epoch."""
    out = []
    for e in epochs if epochs is not None else [None]:
        if e is not None:
            ld.set_epoch(e)
        seq = []
        for b, (data, labels, index) in enumerate(ld):
            for k in range(len(index)):
                seq.append((int(index[k]), int(labels[k]),
                            hashlib.sha1(data[k].tobytes()).hexdigest()))
            if batches is not None and b + 1 == batches:
                break
        out.append(seq)
    ld.close()
    return out


def indices(seq):
    return [s[0] for s in seq]


def check_perm(seq, n, what):
    idx = indices(seq)
    if sorted(idx) != list(range(n)):
        missing = sorted(set(range(n)) - set(idx))[:5]
        fail("%s: %d samples, %d distinct, not each of [0,%d) once (missing %s...)"
             % (what, len(idx), len(set(idx)), n, missing))


def check_content(seq, ref, what):
    """Each sample's label and bytes equal the local dataset's for its index."""
    for pos, (i, lab, h) in enumerate(seq):
        if ref[i][1] != lab:
            fail("%s: position %d, index %d has label %d, the local dataset %d"
                 % (what, pos, i, lab, ref[i][1]))
        if ref[i][2] != h:
            fail("%s: position %d, index %d: its pixels differ from the local dataset's"
                 % (what, pos, i))


def cache(feederctl, sock):
    st = json.loads(subprocess.run([feederctl, "--socket", sock, "status", "--json"],
                                   check=True, capture_output=True, text=True).stdout)
    if "cache" not in st:
        fail("feederctl status --json has no cache object: %s" % st)
    return st["cache"]


def shards_of(manifest):
    """shard number of each global index, from the manifest's first/count."""
    owner = []
    with open(manifest) as f:
        for line in f:
            w = line.split()
            if w and w[0] == "shard":
                first, count = int(w[2]), int(w[3])
                if first != len(owner):
                    fail("manifest: shard %s starts at %d, not %d" % (w[1], first, len(owner)))
                owner += [len(set(owner))] * count
    return owner


def check_blocks(seq, owner, block, what):
    """The order is a shard-block order: a shard, once begun, is finished
    before any shard outside its block of `block` shards begins, so that at
    most `block` shards are open (begun, not finished) at any position."""
    left = {}
    for s in owner:
        left[s] = left.get(s, 0) + 1
    open_, done, most = set(), set(), 0
    for pos, (i, _, _) in enumerate(seq):
        s = owner[i]
        if s in done:
            fail("%s: position %d reads shard %d again after it was finished" % (what, pos, s))
        open_.add(s)
        left[s] -= 1
        if not left[s]:
            open_.discard(s)
            done.add(s)
        most = max(most, len(open_))
        if len(open_) > block:
            fail("%s: %d shards open at position %d (--shuffle-block %d): %s"
                 % (what, len(open_), pos, block, sorted(open_)))
    return most


def serve(sock, feederctl, manifest, block):
    owner = shards_of(manifest)
    n = len(owner)
    seed = 11
    # The local reference: in dataset order (shuffle=False), index i at
    # position i, for the seed and both epochs the remote runs use.
    ref = run(loader(sock, "local", seed=seed), epochs=[0, 1])
    for e, seq in enumerate(ref):
        if indices(seq) != list(range(n)):
            fail("local epoch %d with shuffle=False is not in dataset order" % e)
    # Two epochs from the bucket.
    a = run(loader(sock, "remote", seed=seed, shuffle=True), epochs=[0, 1])
    for e in (0, 1):
        check_perm(a[e], n, "remote epoch %d" % e)
        check_content(a[e], ref[e], "remote epoch %d" % e)
        most = check_blocks(a[e], owner, block, "remote epoch %d" % e)
        if indices(a[e]) == list(range(n)):
            fail("remote epoch %d is in dataset order: not shuffled" % e)
        print("remote epoch %d: %d samples, each index once, labels and pixels equal to "
              "the local dataset's; at most %d shards open at once" % (e, n, most))
    if indices(a[0]) == indices(a[1]):
        fail("epochs 0 and 1 have the same order")
    # The same seed again, from a warm cache.
    c1 = cache(feederctl, sock)
    if c1["fetches"] < 1 or c1["fetches"] > len(set(owner)):
        fail("cache after the first run: %s (expected 1..%d fetches)" % (c1, len(set(owner))))
    b = run(loader(sock, "remote", seed=seed, shuffle=True), epochs=[0, 1])
    c2 = cache(feederctl, sock)
    if b != a:
        fail("the same seed twice gave different sequences")
    if c2["hits"] <= c1["hits"] or c2["fetches"] != c1["fetches"]:
        fail("second run not from the warm cache: before %s, after %s" % (c1, c2))
    print("same seed again: identical; cache hits %d -> %d, fetches %d -> %d"
          % (c1["hits"], c2["hits"], c1["fetches"], c2["fetches"]))
    # Another seed, another order (content checked against its own local run).
    other = run(loader(sock, "remote", seed=seed + 1, shuffle=True), epochs=[0])[0]
    check_perm(other, n, "seed %d" % (seed + 1))
    check_blocks(other, owner, block, "seed %d" % (seed + 1))
    if indices(other) == indices(a[0]):
        fail("seeds %d and %d give the same order" % (seed, seed + 1))
    ref2 = run(loader(sock, "local", seed=seed + 1), epochs=[0])[0]
    check_content(other, ref2, "seed %d" % (seed + 1))
    # Resume in the middle of epoch 1: the tail of the uninterrupted epoch.
    k = 5
    ld = loader(sock, "remote", seed=0, shuffle=True)
    st = ld.state_dict()
    st.update(seed=seed, epoch=1, next_batch=k)
    ld.load_state_dict(st)
    tail, want = run(ld)[0], a[1][k * BATCH:]
    if tail != want:
        fail("resume at batch %d of epoch 1: %d samples, not the %d of the uninterrupted "
             "tail (first index %s, expected %s)"
             % (k, len(tail), len(want), indices(tail[:1]), indices(want[:1])))
    print("resume at batch %d: the %d samples of the uninterrupted tail" % (k, len(tail)))
    # Two ranks take the epoch's order in two contiguous stretches (so each
    # reads about half of the shards), the first one the longer.
    r = [run(loader(sock, "remote", seed=seed, shuffle=True, rank=q, world_size=2),
             epochs=[1])[0] for q in (0, 1)]
    if set(indices(r[0])) & set(indices(r[1])):
        fail("ranks 0 and 1 share samples")
    check_perm(r[0] + r[1], n, "ranks 0 and 1 together")
    half = (n + 1) // 2
    if r[0] != a[1][:half] or r[1] != a[1][half:]:
        fail("ranks 0 and 1 of 2 do not take the first %d and the last %d positions of the "
             "epoch" % (half, n - half))
    print("world 2: ranks of %d and %d samples, disjoint, covering the epoch"
          % (len(r[0]), len(r[1])))


def epochs(sock, dataset, count, train, like=None):
    ld = loader(sock, dataset, seed=3, shuffle=True, copy=True)
    n, classes = ld.samples, ld.classes
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.01, (SIZE * SIZE * 3, classes)).astype(np.float32)
    losses = []
    for e in range(count):
        ld.set_epoch(e)
        seq = []
        for data, labels, index in ld:
            seq += [(int(i), int(lab), hashlib.sha1(d.tobytes()).hexdigest())
                    for d, lab, i in zip(data, labels, index)]
            if train:
                x = data.reshape(len(labels), -1).astype(np.float32) / 255.0 - 0.5
                z = x @ w
                z -= z.max(axis=1, keepdims=True)
                p = np.exp(z)
                p /= p.sum(axis=1, keepdims=True)
                y = labels.astype(np.int64)
                losses.append(float(-np.log(p[np.arange(len(y)), y] + 1e-9).mean()))
                p[np.arange(len(y)), y] -= 1
                w -= 0.05 * x.T @ p / len(y)
        check_perm(seq, n, "epoch %d" % e)
        if like:
            check_content(seq, run(loader(sock, like, seed=3), epochs=[e])[0], "epoch %d" % e)
        print("epoch %d: each of the %d samples once%s" % (
            e, n, ", labels and pixels equal to %s's" % like if like else ""))
    ld.close()
    if train:
        if not losses or not np.all(np.isfinite(losses)):
            fail("training loss not finite: %s" % losses[-5:])
        print("trained %d steps, loss %.3f -> %.3f" % (len(losses), losses[0], losses[-1]))


def main(argv):
    if len(argv) == 5 and argv[0] == "serve":
        serve(argv[1], argv[2], argv[3], int(argv[4]))
    elif len(argv) >= 4 and argv[0] == "epochs":
        opts = argv[4:]
        like = opts[opts.index("--like") + 1] if "--like" in opts[:-1] else None
        epochs(argv[1], argv[2], int(argv[3]), "--train" in opts, like)
    else:
        fail("usage: remote_client.py serve SOCKET FEEDERCTL MANIFEST BLOCK | "
             "epochs SOCKET DATASET N [--train] [--like LOCAL]")


if __name__ == "__main__":
    main(sys.argv[1:])
