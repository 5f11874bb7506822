"""loader.py — feeder.Loader, the drop-in for torch.utils.data.DataLoader.

A Loader asks feederd for one stream per epoch (dataset, pipeline, batch
size, seed, epoch, rank of world, start batch) and yields its batches as
(data, labels) (plus each sample's dataset index and name when asked).
Everything that decides the bytes of a batch is in that
request, so the Loader's whole state is (seed, epoch, next batch): a trainer
that saves state_dict() and later load_state_dict()s it gets exactly the
batches it had not seen, and set_epoch(e) reshuffles like DistributedSampler.
The state also says how many samples of the epoch all ranks together have
taken (sample_position, counting every rank at the same step, as data-
parallel training runs): a state loaded by a Loader of another world size
(or rank) resumes the epoch there, the new ranks sharing what is left
(feederd's start_sample), so that every sample of the epoch is still seen
exactly once (elastic resume).

Batches are zero-copy views of the stream's shared-memory slot, valid until
the next batch is asked for (the slot then goes back to the daemon for
refilling); copy=True gives owned arrays, device="cuda" device tensors. The
first stream is opened by the constructor, so a missing dataset or a bad
option fails there and the daemon starts decoding before the first batch is
asked for.
"""
import os
from typing import Any, Dict, Iterator, Optional, Tuple, Union

import numpy as np

from ._lib import enum_choices, ffi, lib
from ._stream import NUMPY_DTYPE, Stream
from .errors import OptionError, ProtocolError, error_from
from .pipelines import Features, Jpeg, PipelineLike, Wave, as_pipeline

# The names each option takes are the C enums' (feeder_types.h).
_DTYPES = enum_choices("enum feeder_dtype", "FEEDER_DTYPE_")      # u8, f16, f32
_NUMPY_CODES = {dt.name: code for code, dt in NUMPY_DTYPE.items()}  # uint8, float16, ...
_LAYOUTS = enum_choices("enum feeder_layout", "FEEDER_LAYOUT_")
_ON_ERROR = enum_choices("enum feeder_on_error", "FEEDER_ON_ERROR_")
_PLACEMENTS = enum_choices("enum feeder_placement", "FEEDER_PLACEMENT_")
# A stream runs on into the following epochs, so that a loop that calls
# set_epoch(e + 1) finds that epoch's first batches already decoded, as
# feeder-bench's single long stream does (no refill stall at each epoch). A
# loop that goes elsewhere (the same epoch again, a resume) opens a new one.
_EPOCHS_AHEAD = 1000
_STATE_KEYS = ("seed", "epoch", "next_batch", "dataset", "batch_size", "rank", "world_size")

DTypeLike = Any  # a name ("float16", "f16"), a NumPy dtype or a torch dtype
Batch = Tuple[Any, ...]  # (data, labels[, index][, names])


def _dtype_code(dtype: DTypeLike) -> int:
    """A libfeeder dtype from a name, a NumPy dtype or a torch dtype."""
    if isinstance(dtype, str) or type(dtype).__module__.startswith("torch"):
        name = str(dtype).replace("torch.", "")
        name = {"half": "float16", "float": "float32"}.get(name, name)
        if name.lower() in _DTYPES:  # libfeeder's own names: u8, f16, f32
            return _DTYPES[name.lower()]
    else:
        name = dtype
    try:
        name = np.dtype(name).name
    except TypeError:
        pass
    if name not in _NUMPY_CODES:
        raise OptionError("dtype must be one of %s (or %s, or the NumPy or torch dtype), not %r"
                          % (", ".join(sorted(_NUMPY_CODES)), ", ".join(sorted(_DTYPES)), dtype))
    return _NUMPY_CODES[name]


def _choice(name: str, value: Any, table: Dict[str, int]) -> int:
    key = str(value).lower()
    if key not in table:
        raise OptionError("%s must be one of %s, not %r" % (name, ", ".join(sorted(table)), value))
    return table[key]


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise OptionError("environment variable %s=%r is not an integer" % (name, v)) from None


def _dist_rank_world() -> Optional[Tuple[int, int]]:
    """(rank, world size) of torch.distributed's default group when a
    trainer has initialized it (without importing torch otherwise)."""
    import sys
    td = sys.modules.get("torch.distributed")
    try:
        if td is not None and td.is_available() and td.is_initialized():
            return td.get_rank(), td.get_world_size()
    except (AttributeError, RuntimeError):
        pass
    return None


def _name_of(table: Dict[str, int], value: int) -> str:
    return next((k for k, v in table.items() if v == value), str(value))


def _nonneg_int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise OptionError("%s must be a non-negative integer, not %r" % (name, v))
    return int(v)


class Loader:
    """Batches of a feederd dataset for a training loop, in place of
    torch.utils.data.DataLoader (with its Dataset, transforms, sampler and
    workers: all of that is the request to the daemon).

    dataset: name of a dataset the daemon serves. batch_size: samples per
    batch. pipeline: feeder.Jpeg(...), feeder.Features(...),
    feeder.Wave(...), or "jpeg", "features", "wave" for their defaults.
    shuffle: each epoch in a seeded random order (True), or in dataset order
    (False, the default, as DataLoader's; ranks still split it). seed,
    epoch: the order and the augmentation are a pure function of both.
    rank, world_size: this process's share of each epoch (every
    world_size-th sample); default torch.distributed's rank and world size
    when its default group is initialized, else $RANK / $WORLD_SIZE as
    torchrun sets them, else 0 of 1. drop_last: drop the epoch's last short
    batch (default False, as DataLoader's).

    These options, left at None, keep libfeeder's defaults
    (feeder_stream_opts_init, documented in feeder_types.h): slots (batches
    prefetched in shared memory; 4); dtype (float32; "uint8", "float16",
    "float32", libfeeder's "u8", "f16", "f32", or the NumPy or torch dtype);
    layout ("NCHW"; "NHWC" for images); on_error ("replace" a corrupt
    sample by the next valid one, or "fail" the epoch with DatasetError);
    placement (where feederd preprocesses: "cpu", its worker threads; "gpu",
    its GPU, feederd --gpu N; "auto", whichever its first batches show to
    be faster. With placement="gpu" and device="cuda" on the daemon's GPU,
    batches are delivered in device memory (CUDA IPC), with no copy at all;
    otherwise through the pinned host ring). The Loader reads the values in
    force back (loader.slots, loader.dtype, ...).

    socket: the daemon's socket (default $FEEDER_SOCKET, else
    /run/feeder/feederd.sock). as_torch: yield torch.Tensors
    (torch.from_numpy, still zero-copy) instead of NumPy arrays. copy: yield
    owned copies instead of views of the slot. device: None (host memory) or
    "cuda"/"cuda:N": yield device tensors, copied from the pinned ring on a
    side CUDA stream while the trainer computes on the previous batch.
    timeout: seconds to wait for a batch (or the stream) before
    DaemonTimeoutError; None waits forever. connect_timeout: seconds to keep
    retrying a daemon that is not up yet. reconnect: seconds to keep trying
    a daemon that went away mid-stream (it crashed or was restarted): the
    stream is reopened at the batch after the last one delivered, so
    iteration goes on with exactly the batches an undisturbed run would
    have had. 0 (the default) raises DaemonConnectionError instead; None
    keeps trying forever. loader.reconnects counts them. return_index: also
    yield each sample's dataset index (a uint64 array; int64 tensor with
    as_torch), the record actually delivered. return_names: also yield each
    sample's name as the dataset keeps it (a list of str, "" where it keeps
    none; utterance ids, file names). A batch is then (data, labels[,
    index][, names]).

    Where it differs from DataLoader: batch_size has no default (DataLoader:
    1); the order is seeded (seed=0, not torch's generator), so two runs
    see the same batches unless seed differs; there is no num_workers,
    collate_fn, sampler or pin_memory (the daemon's workers, the pipeline
    and device= do that); labels are int32 (use labels.long() for torch
    losses); timeout is 60 s (DataLoader: 0, wait forever; here None); the
    stream runs on into the next epoch (as persistent_workers=True), so
    set_epoch(e + 1) finds its first batches decoded already. Where it
    differs from libfeeder's defaults: shuffle (C: 1) is False like
    DataLoader's; drop_last is False in both.

    A view (copy=False, no device) is valid until the next batch is asked
    for: the slot then goes back to the daemon and is overwritten. Keep a
    batch longer with copy=True or arr.copy(). Memory stays mapped while any
    view exists, so a stale view reads old data but never faults.

    len(loader) is the number of batches of an epoch for this rank;
    loader.samples, loader.classes and loader.shape (of a full batch) come
    from the daemon. Options out of range are refused by the daemon, whose
    sentence names the field (OptionError). A Loader is used by one thread
    at a time.
    """

    def __init__(self, dataset: str, batch_size: int, pipeline: PipelineLike = "jpeg",
                 seed: int = 0, epoch: int = 0, rank: Optional[int] = None,
                 world_size: Optional[int] = None, drop_last: bool = False,
                 slots: Optional[int] = None, dtype: Optional[DTypeLike] = None,
                 layout: Optional[str] = None, socket: Optional[str] = None,
                 on_error: Optional[str] = None, as_torch: bool = False, copy: bool = False,
                 device: Optional[str] = None, timeout: Optional[float] = 60.0,
                 connect_timeout: Optional[float] = 10.0, reconnect: Optional[float] = 0,
                 placement: Optional[str] = None, shuffle: bool = False,
                 return_index: bool = False, return_names: bool = False) -> None:
        if not isinstance(dataset, str) or not dataset:
            raise OptionError("dataset must be a non-empty name, not %r" % (dataset,))
        self.dataset = dataset
        self.batch_size = _nonneg_int("batch_size", batch_size)
        self.pipeline: Union[Jpeg, Features, Wave] = as_pipeline(pipeline)
        self.seed = _nonneg_int("seed", seed)
        self.epoch = _nonneg_int("epoch", epoch)
        # Unset rank / world_size come from torch.distributed's default
        # group when it is initialized, else from torchrun's environment.
        dist = _dist_rank_world() if rank is None or world_size is None else None
        if world_size is None:
            world_size = dist[1] if dist else _env_int("WORLD_SIZE", 1)
        if rank is None:
            rank = dist[0] if dist else _env_int("RANK", 0)
        self.world_size = _nonneg_int("world_size", world_size)
        self.rank = _nonneg_int("rank", rank)
        self.drop_last = bool(drop_last)
        self.shuffle = bool(shuffle)
        self.return_index = bool(return_index)
        self.return_names = bool(return_names)
        # The options libfeeder has defaults for: given ones are checked for
        # their kind here, ranges by the daemon; the values in force are read
        # back from the request.
        self._given = {}
        if slots is not None:
            self._given["slots"] = _nonneg_int("slots", slots)
        if dtype is not None:
            self._given["dtype"] = _dtype_code(dtype)
        if layout is not None:
            self._given["layout"] = _choice("layout", layout, _LAYOUTS)
        if on_error is not None:
            self._given["on_error"] = _choice("on_error", on_error, _ON_ERROR)
        if placement is not None:
            self._given["placement"] = _choice("placement", placement, _PLACEMENTS)
        self.socket = socket
        self.as_torch = bool(as_torch)
        self.copy = bool(copy)
        if timeout is not None and timeout < 0 or connect_timeout is not None and connect_timeout < 0:
            raise OptionError("timeouts must be >= 0 seconds or None")
        if reconnect is not None and reconnect < 0:
            raise OptionError("reconnect must be >= 0 seconds or None")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.reconnect = reconnect
        self._reconnects = 0   # of streams already let go
        self._copier = None
        self.next_batch = 0
        # The epoch (if any) that starts at a sample position: a resume with
        # another world size; it applies to that epoch's one pass only.
        self._start_epoch: Optional[int] = None
        self._start_sample = 0
        o = self._opts(self.epoch, 0)
        self.slots: int = o.slots
        self.dtype: np.dtype = NUMPY_DTYPE[o.dtype]
        self.layout: str = _name_of(_LAYOUTS, o.layout).upper()
        self.on_error: str = _name_of(_ON_ERROR, o.on_error)
        self.placement: str = _name_of(_PLACEMENTS, o.placement)
        if device is not None:
            from ._cuda import DeviceCopier
            self._copier = DeviceCopier(device)
            if self.slots < 2:
                raise OptionError("device=%r needs slots >= 2 (one batch is copied while the "
                                  "previous one is in use)" % (device,))
        if self.as_torch or self._copier:
            try:
                import torch
            except ImportError:
                raise OptionError("as_torch=True needs PyTorch, which is not installed") from None
            self._torch = torch
        self.replacements = 0  # corrupt samples the daemon replaced, over the Loader's life
        self._iter_id = 0
        self._stream: Optional[Stream] = None    # the stream of the running (or next) epoch
        self._stream = self._open(self.epoch, 0)
        self._batches_per_epoch: int = self._stream.batches_per_epoch
        self.samples: int = self._stream.samples
        self.classes: int = self._stream.classes
        self.shape: Tuple[int, ...] = self._stream.shape  # of a full batch, e.g. (B, 3, H, W)

    # ---- the request --------------------------------------------------

    def _opts(self, epoch: int, start: int) -> Any:
        o = ffi.new("struct feeder_stream_opts *")
        lib.feeder_stream_opts_init(o)
        rc = lib.feeder_stream_opts_set_dataset(o, self.dataset.encode())
        if rc:
            raise error_from(rc, "dataset name %r is not allowed (1..%d characters of "
                             "A-Z a-z 0-9 . _ -, not starting with '.')"
                             % (self.dataset, lib.FEEDER_DATASET_MAX - 1))
        try:
            self.pipeline.fill(o)
            o.batch = self.batch_size
            o.seed = self.seed
            o.epoch = epoch
            o.epochs = _EPOCHS_AHEAD
            o.start_batch = start
            o.start_sample = self._start_of(epoch)
            o.rank = self.rank
            o.world = self.world_size
            o.drop_last = int(self.drop_last)
            for k, v in self._given.items():
                setattr(o, k, v)
            o.device_batches = int(self._copier is not None)
            o.shuffle = int(self.shuffle)
            o.names = int(self.return_names)
        except (OverflowError, TypeError) as e:
            raise OptionError("option out of range for feederd: %s" % e) from None
        return o

    def _open(self, epoch: int, start: int) -> Stream:
        o = self._opts(epoch, start)
        s = Stream(self.socket, o, self.connect_timeout, self.timeout,
                   ndim=3 if self.pipeline.kind == "features" else 4, reconnect=self.reconnect)
        s.pos = (epoch, start)  # of the next batch it delivers
        s.start_sample = o.start_sample
        s.left = s.batches      # batches it still delivers
        if self._copier and s.memory == lib.FEEDER_MEMORY_HOST:
            self._copier.prepare(s)
        return s

    # ---- the DataLoader surface ----------------------------------------

    def __len__(self) -> int:
        """Batches of one epoch for this rank."""
        return self._batches_per_epoch

    def _start_of(self, epoch: int) -> int:
        return self._start_sample if epoch == self._start_epoch else 0

    def _epoch_batches(self, epoch: int) -> int:
        """This rank's batches in epoch: a full epoch's, or fewer in an epoch
        resumed at a sample position."""
        start = self._start_of(epoch)
        if not start:
            return self._batches_per_epoch
        left = self.samples - start
        share = (left - self.rank + self.world_size - 1) // self.world_size if left > self.rank else 0
        return share // self.batch_size if self.drop_last else -(-share // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Use epoch's order from the next iteration on. Setting the epoch
        the Loader is already at keeps its position (so a trainer may call
        load_state_dict and then set_epoch with the same epoch)."""
        epoch = _nonneg_int("epoch", epoch)
        if epoch != self.epoch:
            self.epoch = epoch
            self.next_batch = 0
            self._start_epoch = None
            self._start_sample = 0

    def sample_position(self) -> int:
        """Samples of the current epoch that all ranks together have taken,
        if every rank is at this one's batch (data-parallel steps)."""
        start = self._start_of(self.epoch)
        if self.next_batch >= self._epoch_batches(self.epoch):
            return self.samples
        return min(self.samples, start + self.next_batch * self.batch_size * self.world_size)

    def state_dict(self) -> Dict[str, Any]:
        """What resumes this Loader exactly: seed, epoch and the next batch
        (the one after the last handed out), plus the request's shape so
        that a mismatched resume is refused; start_sample and
        sample_position let a Loader of another world size resume the
        epoch where all ranks stopped."""
        return {"seed": self.seed, "epoch": self.epoch, "next_batch": self.next_batch,
                "dataset": self.dataset, "batch_size": self.batch_size, "rank": self.rank,
                "world_size": self.world_size, "shuffle": self.shuffle,
                "start_sample": self._start_of(self.epoch),
                "sample_position": self.sample_position()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        missing = [k for k in _STATE_KEYS if k not in state]
        if missing:
            raise OptionError("Loader state lacks %s" % ", ".join(missing))
        elastic = (state["world_size"], state["rank"]) != (self.world_size, self.rank)
        if elastic and "sample_position" not in state:
            raise OptionError("Loader state is for rank %r of %r, this Loader is rank %d of %d, "
                              "and the state has no sample_position to resume the epoch from "
                              "(saved by an older feeder)"
                              % (state["rank"], state["world_size"], self.rank, self.world_size))
        # States saved before the shuffle option existed were shuffled. Another
        # world size resumes by sample position, whatever the batch size was.
        keys = [("dataset", None), ("shuffle", True)]
        if not elastic:
            keys.append(("batch_size", None))
        for k, default in keys:
            v = state.get(k, default)
            if v != getattr(self, k):
                raise OptionError("Loader state is for %s=%r, this Loader has %r; resuming it would "
                                  "not give the same batches" % (k, v, getattr(self, k)))
        seed = _nonneg_int("seed", state["seed"])
        epoch = _nonneg_int("epoch", state["epoch"])
        if elastic:
            start = _nonneg_int("sample_position", state["sample_position"])
            if start > self.samples:
                raise OptionError("Loader state's sample_position %d is past the %d samples of "
                                  "the dataset (a state of another dataset?)" % (start, self.samples))
            next_batch = 0
        else:
            start = _nonneg_int("start_sample", state.get("start_sample", 0))
            next_batch = _nonneg_int("next_batch", state["next_batch"])
        self.seed, self.epoch = seed, epoch
        self._start_epoch, self._start_sample = (epoch, start) if start else (None, 0)
        bpe = self._epoch_batches(epoch)
        if next_batch > bpe:
            raise OptionError("Loader state's next_batch %d is past the %d batches of an epoch "
                              "(a state of another dataset or batch size?)" % (next_batch, bpe))
        self.next_batch = next_batch

    def __iter__(self) -> Iterator[Batch]:
        self._iter_id += 1
        if self._copier:
            return self._iter_device(self._iter_id)
        return self._iter_host(self._iter_id)

    def close(self) -> None:
        """Let go of the stream. Views still alive keep its memory mapped
        until they are dropped; the connection closes with the last one."""
        self._iter_id += 1
        self._drop_stream()

    def _drop_stream(self) -> None:
        if self._stream is not None:
            self._reconnects += self._stream.reconnects
        self._stream = None

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def reconnects(self) -> int:
        """Times the Loader's streams reconnected to a restarted daemon."""
        s = self._stream
        return self._reconnects + (0 if s is None else s.reconnects)

    @property
    def ring(self) -> Optional[Tuple[int, int]]:
        """(address, size) of the current stream's shared-memory ring, or
        None: for checking that views are zero-copy."""
        s = self._stream
        return None if s is None else (s.ring_address, s.ring_size)

    # ---- iteration -------------------------------------------------------

    def _take_stream(self):
        """The stream for (epoch, next_batch): the one already prefetching
        if it is there, else a new one."""
        s = self._stream
        if (s is None or s.pos != (self.epoch, self.next_batch) or s.left == 0
                or s.start_sample != self._start_of(self.epoch)):
            self._drop_stream()
            s = self._stream = self._open(self.epoch, self.next_batch)
        return s

    def _epoch_done(self):
        self.next_batch = 0
        if self._start_epoch == self.epoch:  # the resumed epoch's one pass is over
            self._start_epoch, self._start_sample = None, 0

    def _fetch(self, s):
        """The stream's next batch, which must be the one at s.pos; s.pos
        moves on (into the next epoch after the last batch of this one)."""
        b = s.next(self.timeout)
        if b is None or (b.epoch, b.batch_index) != s.pos:
            got = "the end of the stream" if b is None else "batch %d of epoch %d" % (
                b.batch_index, b.epoch)
            raise ProtocolError("feederd sent %s where batch %d of epoch %d was due (stream %d)"
                                % (got, s.pos[1], s.pos[0], s.id), lib.FEEDER_EPROTO)
        s.left -= 1
        nxt = b.batch_index + 1
        if nxt < self._epoch_batches(b.epoch):
            s.pos = (b.epoch, nxt)
        else:  # the stream runs on into the next epoch, which starts at its beginning
            s.pos = (b.epoch + 1, 0)
            s.start_sample = 0
        return b

    def _extras(self, stream, b):
        """(index,) and/or (names,) of batch b as asked for: owned copies, so
        they outlive the slot."""
        out = ()
        if self.return_index:
            index = stream.indices(b)
            if self.as_torch or self._copier:
                index = self._torch.from_numpy(index.astype(np.int64))
            out += (index,)
        if self.return_names:
            out += (stream.names(b),)
        return out

    def _host_batch(self, stream, b):
        data, labels = stream.views(b)
        if self.copy:
            data, labels = data.copy(), labels.copy()
        if self.as_torch:
            data, labels = self._torch.from_numpy(data), self._torch.from_numpy(labels)
        return (data, labels) + self._extras(stream, b)

    def _iter_host(self, my_id):
        if self.next_batch >= self._epoch_batches(self.epoch):
            self._epoch_done()
            return
        s = self._take_stream()
        yield from self._iter_slots(my_id, s, lambda b: self._host_batch(s, b), s.release)

    def _iter_slots(self, my_id, s, make, release):
        """The rest of the epoch from stream s, each batch made by make(b)
        from its slot; a slot is held (release(b) gives it back) until the
        next batch is asked for, or released at once with copy=True."""
        bpe = self._epoch_batches(self.epoch)
        held = None
        try:
            while True:
                if held is not None:
                    release(held)
                    held = None
                if self.next_batch >= bpe:
                    self._epoch_done()
                    return
                if self._iter_id != my_id:
                    return
                b = self._fetch(s)
                self.next_batch = b.batch_index + 1
                self.replacements += b.replacements
                out = make(b)
                if self.copy:
                    release(b)
                else:
                    held = b
                yield out
        finally:
            # A loop left early (break, exception) gives its slot back; the
            # stream stays for a later iteration to continue.
            if held is not None:
                try:
                    release(held)
                except Exception:
                    pass

    def _iter_device(self, my_id):
        bpe = self._epoch_batches(self.epoch)
        if self.next_batch >= bpe:
            self._epoch_done()
            return
        s = self._take_stream()
        if s.memory == lib.FEEDER_MEMORY_DEVICE:
            yield from self._iter_resident(my_id, s)
            return
        cp = self._copier
        done = None     # (batch, event) handed out last; released next step
        pending = None  # (batch, (data, labels, event)) copy in flight
        try:
            b = self._fetch(s)
            pending = (b, cp.start(*s.views(b)), self._extras(s, b))
            while pending is not None:
                if done is not None:
                    done[1].synchronize()
                    s.release(done[0])
                    done = None
                if self._iter_id != my_id:
                    return
                pb, copy, extras = pending
                nxt = None
                if pb.batch_index + 1 < bpe:
                    b = self._fetch(s)
                    nxt = (b, cp.start(*s.views(b)), self._extras(s, b))
                self.next_batch = pb.batch_index + 1
                self.replacements += pb.replacements
                out = tuple(cp.finish(copy)) + extras
                done, pending = (pb, copy[2]), nxt
                yield out
            if done is not None:
                done[1].synchronize()
                s.release(done[0])
                done = None
            self._epoch_done()
        finally:
            for held, ev in ((done, done and done[1]), (pending, pending and pending[1][2])):
                if held is not None:
                    try:
                        ev.synchronize()
                        s.release(held[0])
                    except Exception:
                        pass

    def _iter_resident(self, my_id, s):
        """Batches that feederd wrote into GPU memory shared with us: a
        tensor over the slot itself. The trainer's current CUDA stream waits
        (on the GPU) for the daemon's write; the slot goes back when the next
        batch is asked for, ordered after the work queued on that stream."""
        torch = self._torch
        dev = self._copier.device

        def current():
            return torch.cuda.current_stream(dev).cuda_stream

        def make(b):
            s.wait_on(b, current())
            data = torch.as_tensor(s.device_view(b), device=dev)
            labels = torch.from_numpy(s.views_labels(b)).to(dev)
            return ((data.clone() if self.copy else data), labels) + self._extras(s, b)

        yield from self._iter_slots(my_id, s, make, lambda b: s.release_on(b, current()))
