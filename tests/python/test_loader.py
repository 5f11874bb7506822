"""test_loader.py — feeder.Loader against a real feederd: the batches equal
what the C client receives for the same request, views are zero-copy (their
memory lies inside the mapped ring), state_dict resumes exactly,
set_epoch changes the order, ranks split the epoch, and the defaults are
DataLoader's where it has the option."""
import os
import struct

import lmdb
import numpy as np
import pytest

import feeder
from conftest import c_batches
from feeder._lib import lib

SIZE = 32


def loader(daemon, **kw):
    """The Loader most tests use: shuffled, full batches, float16 (the
    defaults are tested by test_defaults_are_dataloaders)."""
    kw.setdefault("pipeline", feeder.Jpeg(SIZE))
    kw.setdefault("batch_size", 8)
    kw.setdefault("timeout", 20)
    kw.setdefault("shuffle", True)
    kw.setdefault("drop_last", True)
    kw.setdefault("dtype", "float16")
    return feeder.Loader("imgs", socket=daemon.sock, **kw)


def c_jpeg(daemon, workdir, size=SIZE, train=1, **fields):
    """c_batches of imgs through the jpeg pipeline at size x size."""
    fields.update({"dataset": "imgs", "jpeg.height": size, "jpeg.width": size,
                   "jpeg.train": train})
    return c_batches(daemon.sock, workdir, **fields)


def epoch_of(ld):
    """An epoch as a list of owned (data, labels) pairs."""
    return [(d.copy(), lab.copy()) for d, lab in ld]


def assert_c_equal(got, ref):
    """Batches (data, labels, ...) equal the C client's: dtype, shape (the
    C client's is always 4-d), bytes and labels."""
    assert len(got) == len(ref)
    for (d, lab, *_), r in zip(got, ref):
        assert d.dtype == r["data"].dtype and d.shape == r["data"].shape[:d.ndim]
        assert d.tobytes() == r["data"].tobytes() and np.array_equal(lab, r["labels"])


def _indices(ld, batches=None):
    out = []
    for i, (_, _, idx) in enumerate(ld):
        out += idx.tolist()
        if batches is not None and i + 1 == batches:
            break
    return out


def _ranked(daemon, batch, rank, world, state=None, **kw):
    """A Loader of rank (of world) whose batches carry their indices, with
    state loaded if given."""
    ld = loader(daemon, batch_size=batch, rank=rank, world_size=world, drop_last=False,
                return_index=True, **kw)
    if state is not None:
        ld.load_state_dict(state)
    return ld


def test_len_shape_dtype(daemon):
    ld = loader(daemon)
    assert len(ld) == 40 // 8 and ld.samples == 40 and ld.classes == 4
    got = epoch_of(ld)
    assert len(got) == len(ld)
    for d, lab in got:
        assert d.shape == (8, 3, SIZE, SIZE) and d.dtype == np.float16
        assert lab.dtype == np.int32 and lab.shape == (8,)
        assert ((lab >= 0) & (lab < 4)).all()
        assert np.isfinite(d.astype(np.float32)).all() and d.std() > 0


CASES = [
    # (C dtype, Loader dtype, layout, train, batch, drop_last)
    (lib.FEEDER_DTYPE_F16, "float16", "NCHW", 1, 8, True),
    (lib.FEEDER_DTYPE_U8, "uint8", "NHWC", 0, 8, True),
    (lib.FEEDER_DTYPE_F32, np.float32, "NCHW", 1, 6, False),
]


@pytest.mark.parametrize("cdt,dt,layout,train,batch,drop", CASES)
def test_equals_c_client(daemon, workdir, cdt, dt, layout, train, batch, drop):
    ref = c_jpeg(daemon, workdir, train=train, dtype=cdt, batch=batch, seed=11, epoch=2,
                 layout=getattr(lib, "FEEDER_LAYOUT_" + layout), drop_last=int(drop))
    ld = loader(daemon, batch_size=batch, seed=11, epoch=2, dtype=dt, layout=layout,
                drop_last=drop, pipeline=feeder.Jpeg(SIZE, train=bool(train)))
    got = epoch_of(ld)
    assert len(got) == len(ld)
    assert_c_equal(got, ref)
    if not drop:
        assert ref[-1]["data"].shape[0] == 40 % batch and got[-1][0].shape[0] == 40 % batch


def test_copy_true_owns_equal_arrays(daemon, workdir):
    ref = c_jpeg(daemon, workdir, dtype=lib.FEEDER_DTYPE_F16, batch=8, seed=4, drop_last=1)
    ld = loader(daemon, seed=4, copy=True)
    ring = ld.ring
    got = list(ld)  # kept across batches: only owned arrays may be
    assert_c_equal(got, ref)
    for d, _ in got:
        addr = d.__array_interface__["data"][0]
        assert not ring[0] <= addr < ring[0] + ring[1]
        assert d.flags.owndata or d.base is not None and d.base.flags.owndata


def test_zero_copy_views_lie_in_ring(daemon):
    ld = loader(daemon)
    base, size = ld.ring
    n = 0
    for d, lab in ld:
        for a in (d, lab):
            addr = a.__array_interface__["data"][0]
            assert base <= addr and addr + a.nbytes <= base + size
            assert not a.flags.owndata
        # Writable in place (the trainer may normalize in the slot).
        assert d.flags.writeable
        d[0, 0, 0, 0] = 1.5
        assert d[0, 0, 0, 0] == np.float16(1.5)
        n += 1
    assert n == len(ld)


def test_state_dict_resumes_exactly(daemon):
    full = epoch_of(loader(daemon, seed=9, epoch=1))
    ld = loader(daemon, seed=9, epoch=1)
    head = []
    for d, lab in ld:
        head.append((d.copy(), lab.copy()))
        if len(head) == 2:
            state = ld.state_dict()
            break
    assert state["seed"] == 9 and state["epoch"] == 1 and state["next_batch"] == 2
    ld2 = loader(daemon)  # other seed/epoch: the state must override them
    ld2.load_state_dict(state)
    ld2.set_epoch(1)  # the usual loop calls this; same epoch keeps the position
    rest = epoch_of(ld2)
    assert len(rest) == len(full) - 2
    for (d, lab), (fd, flab) in zip(head + rest, full):
        assert d.tobytes() == fd.tobytes() and np.array_equal(lab, flab)
    # After a complete epoch the position is back at 0.
    assert ld2.state_dict()["next_batch"] == 0
    # The first loader continues where it broke off, too.
    cont = epoch_of(ld)
    assert [c[0].tobytes() for c in cont] == [f[0].tobytes() for f in full[2:]]


def test_state_at_last_batch_resumes_to_nothing(daemon):
    ld = loader(daemon)
    for i, _ in enumerate(ld):
        if i == len(ld) - 1:
            state = ld.state_dict()
    assert state["next_batch"] == len(ld)
    ld2 = loader(daemon)
    ld2.load_state_dict(state)
    assert list(ld2) == []


def test_set_epoch_changes_order(daemon):
    ld = loader(daemon, seed=5)
    e0 = epoch_of(ld)
    first_stream = ld._stream
    ld.set_epoch(1)
    e1 = epoch_of(ld)
    # Epoch 1 came from the same stream, already prefetched, and equals a
    # fresh request for epoch 1.
    assert ld._stream is first_stream
    fresh = epoch_of(loader(daemon, seed=5, epoch=1))
    assert [d.tobytes() for d, _ in e1] == [d.tobytes() for d, _ in fresh]
    ld.set_epoch(0)
    e0b = epoch_of(ld)
    assert [d.tobytes() for d, _ in e0] == [d.tobytes() for d, _ in e0b]
    assert [lab.tolist() for _, lab in e0] != [lab.tolist() for _, lab in e1]
    # Same epoch again without set_epoch: the same order (DistributedSampler).
    assert [d.tobytes() for d, _ in epoch_of(ld)] == [d.tobytes() for d, _ in e0]


def _samples(batches):
    """Each sample as (pixels, label): eval crops identify a sample."""
    return [(d[i].tobytes(), int(lab[i])) for d, lab in batches for i in range(len(lab))]


def test_rank_split(daemon, monkeypatch):
    eval_jpeg = feeder.Jpeg(SIZE, train=False)
    all_ = _samples(epoch_of(loader(daemon, batch_size=4, seed=2, pipeline=eval_jpeg)))
    assert len(set(all_)) == 40
    parts = []
    for r in range(2):
        ld = loader(daemon, batch_size=4, seed=2, pipeline=eval_jpeg, rank=r, world_size=2)
        assert len(ld) == 5
        parts.append(_samples(epoch_of(ld)))
    assert len(parts[0]) == len(parts[1]) == 20
    assert not set(parts[0]) & set(parts[1])
    assert set(parts[0]) | set(parts[1]) == set(all_)
    # torchrun's environment sets the defaults.
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    ld = loader(daemon, batch_size=4, seed=2, pipeline=eval_jpeg)
    assert (ld.rank, ld.world_size) == (1, 2)
    assert _samples(epoch_of(ld)) == parts[1]


def test_features_equal_c_client(speech, workdir):
    ld = feeder.Loader("speech", 4, pipeline=feeder.Features(chunk_len=40), dtype="float32",
                       socket=speech.sock, seed=3, timeout=20, shuffle=True, drop_last=True)
    got = epoch_of(ld)
    ref = c_batches(speech.sock, workdir, dtype=lib.FEEDER_DTYPE_F32, dataset="speech",
                    pipeline=lib.FEEDER_PIPE_FEATURES, batch=4, seed=3,
                    **{"features.chunk_len": 40}, drop_last=1)
    assert len(ld) == 3
    assert_c_equal(got, ref)
    for d, _ in got:
        assert d.shape == (4, ld.shape[1], 40) and d.dtype == np.float32 and d.std() > 0


def _dataset_labels_names(daemon):
    """Each record's label and name, read from the dataset's LMDB file with
    python3-lmdb (an independent reader)."""
    env = lmdb.open(os.path.join(daemon.datasets, "imgs"), readonly=True, lock=False,
                    max_dbs=8, subdir=True)
    labels, names = {}, {}
    with env.begin() as t:
        for key, val in t.cursor(db=env.open_db(b"samples", txn=t)):
            labels[struct.unpack(">Q", key)[0]] = struct.unpack_from("<I", val, 0)[0]
        for key, val in t.cursor(db=env.open_db(b"names", txn=t)):
            names[struct.unpack(">Q", key)[0]] = val.decode()
    env.close()
    return labels, names


def test_return_index_and_names_match_the_dataset(daemon):
    labels, names = _dataset_labels_names(daemon)
    ld = loader(daemon, batch_size=8, drop_last=False, return_index=True, return_names=True)
    seen = []
    for d, lab, idx, nm in ld:
        assert idx.dtype == np.uint64 and idx.shape == lab.shape and len(nm) == len(lab)
        for i, n, y in zip(idx.tolist(), nm, lab.tolist()):
            assert labels[i] == y and names[i] == n and n
        seen += idx.tolist()
    # One epoch: every record once, in a shuffled order.
    assert sorted(seen) == list(range(40)) and seen != list(range(40))
    # Without the options a batch is (data, labels).
    assert len(next(iter(loader(daemon)))) == 2


def test_shuffle_false_is_dataset_order(daemon):
    for rank in range(2):
        ld = _ranked(daemon, 6, rank, 2, shuffle=False)
        for epoch in (0, 3):
            ld.set_epoch(epoch)
            assert _indices(ld) == list(range(rank, 40, 2)), (rank, epoch)


def test_load_state_past_the_epoch_is_refused(daemon):
    ld = loader(daemon)
    state = ld.state_dict()
    state["next_batch"] = len(ld) + 1
    with pytest.raises(feeder.OptionError) as e:
        ld.load_state_dict(state)
    assert "past the" in str(e.value)
    state["next_batch"] = len(ld)  # the end of the epoch itself is fine
    ld.load_state_dict(state)
    state["shuffle"] = False
    with pytest.raises(feeder.OptionError):
        ld.load_state_dict(state)


@pytest.mark.parametrize("world2,batch2", [(1, 8), (3, 4), (4, 2)])
def test_elastic_resume_with_another_world_size(daemon, world2, batch2):
    """Two ranks stop after 2 batches of 4 (16 of the 40 samples); Loaders of
    another world size (and batch size) load a rank's state: together they
    take every sample of the epoch not yet seen, once; the epoch after is
    whole again."""
    seen, states = [], []
    for r in range(2):
        ld = _ranked(daemon, 4, r, 2, seed=6, epoch=2)
        seen += _indices(ld, batches=2)
        states.append(ld.state_dict())
    assert len(seen) == 16 and states[0]["sample_position"] == states[1]["sample_position"] == 16
    rest = []
    for r in range(world2):
        ld = _ranked(daemon, batch2, r, world2, states[r % 2], seed=0)
        assert ld.epoch == 2 and ld.next_batch == 0
        rest += _indices(ld)
        assert ld.state_dict()["sample_position"] == 0  # back at the start of an epoch
        # The next epoch is whole again: this rank's full share.
        ld.set_epoch(3)
        assert len(_indices(ld)) == len(range(r, 40, world2))
    assert sorted(seen + rest) == list(range(40)), (sorted(seen), sorted(rest))
    # A state saved mid-resumed-epoch resumes exactly (same world size).
    ld = _ranked(daemon, batch2, 0, world2, states[0])
    first = _indices(ld, batches=1)
    st = ld.state_dict()
    assert st["start_sample"] == 16 and st["next_batch"] == 1
    assert st["sample_position"] == min(40, 16 + batch2 * world2)
    assert first + _indices(_ranked(daemon, batch2, 0, world2, st)) == _indices(
        _ranked(daemon, batch2, 0, world2, states[0]))


def test_elastic_state_without_position_is_refused(daemon):
    ld = loader(daemon, batch_size=4, rank=0, world_size=2)
    state = ld.state_dict()
    del state["sample_position"]
    other = loader(daemon, batch_size=4, rank=0, world_size=3)
    with pytest.raises(feeder.OptionError) as e:
        other.load_state_dict(state)
    assert "sample_position" in str(e.value)
    state["sample_position"] = 41
    with pytest.raises(feeder.OptionError) as e:
        other.load_state_dict(state)
    assert "past the 40 samples" in str(e.value)


def test_defaults_are_dataloaders(daemon, workdir):
    """Loader(dataset, batch_size) is DataLoader(dataset, batch_size)'s
    epoch: in dataset order, with the last short batch; the rest is
    libfeeder's defaults (float32, 4 slots), byte for byte the C client's
    with shuffle off."""
    ld = feeder.Loader("imgs", 6, pipeline=feeder.Jpeg(SIZE), socket=daemon.sock,
                       return_index=True)
    assert (ld.shuffle, ld.drop_last, ld.slots, ld.dtype) == (False, False, 4, np.float32)
    got = [(d.copy(), lab.copy(), idx) for d, lab, idx in ld]
    assert [len(lab) for _, lab, _ in got] == [6] * 6 + [4]
    assert [i for _, _, idx in got for i in idx.tolist()] == list(range(40))
    assert len(got) == len(ld) and got[0][0].dtype == np.float32
    assert_c_equal(got, c_jpeg(daemon, workdir, batch=6, shuffle=0))
