"""_stream.py — one libfeeder stream, owned by Python, and zero-copy NumPy
views of its batches.

Each Stream has its own connection (feeder_connect + feeder_stream_open), so
closing it is one feeder_disconnect and no two Python objects share a
libfeeder connection (libfeeder takes no locks; a finalizer running on another
thread must not touch a connection that a Loader is waiting on).

The arrays handed to the trainer point into the stream's shared-memory ring.
Each one holds a reference to the owner of the stream's connection (through
the array's .base), so the ring stays mapped for as long as any view of it is
alive: a view kept past the end of an epoch shows stale data, never unmapped
memory. The connection closes when the Loader has let go of the Stream and
the last view is gone. After a reconnect (a restarted daemon) libfeeder lets
go of the old ring's memory once no batch of it is held; its address range
stays mapped, so a view of a released batch kept that long reads zeros, and
the trainer's memory does not grow with each restart. Nothing here keeps a
ring of its own (the cached slot views are rebuilt when a slot's address
changes).
"""
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ._lib import enum_choices, ffi, lib
from .errors import DaemonTimeoutError, error_from, last_error


def _numpy_dtypes() -> Dict[int, np.dtype]:
    """enum feeder_dtype as NumPy dtypes: FEEDER_DTYPE_U8 is uint8, _F16
    float16, _F32 float32 (a letter for the kind, then the bits)."""
    kinds = {"u": "uint", "i": "int", "f": "float"}
    out = {}
    for name, code in enum_choices("enum feeder_dtype", "FEEDER_DTYPE_").items():
        try:
            out[code] = np.dtype(kinds[name[0]] + name[1:])
        except (KeyError, TypeError):
            pass  # a dtype NumPy lacks: a stream of it is refused below
    return out


NUMPY_DTYPE = _numpy_dtypes()
_LABEL_DTYPE = np.dtype(np.int32)
# feeder_stream_next waits in slices this long, so that Ctrl-C interrupts a wait.
_SLICE_MS = 200


def _ms(seconds: Optional[float]) -> int:
    """libfeeder's timeout_ms for a timeout in seconds (None: forever)."""
    if seconds is None:
        return -1
    return max(0, int(seconds * 1000))


class _SlotMemory:
    """The base of a view: exposes ring memory through the array interface
    and keeps the connection (and so the mapping) alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner, address, shape, typestr):
        self.__array_interface__ = {"data": (address, False), "shape": shape,
                                    "typestr": typestr, "version": 3}
        self.owner = owner


class _Owner:
    """Owns the libfeeder connection (and with it the stream and the ring's
    mapping). Views reference this, not the Stream, so that the Stream may
    cache views of its slots without a reference cycle: the connection then
    closes as soon as the last reference goes, not at the next GC run."""

    __slots__ = ("conn", "closers")

    def __init__(self):
        self.conn = ffi.NULL
        self.closers = []

    def close(self):
        closers, self.closers = self.closers, []
        for fn in closers:
            fn()
        conn, self.conn = self.conn, ffi.NULL
        if conn != ffi.NULL:
            lib.feeder_disconnect(conn)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be gone
            pass


class _DeviceSlot:
    """A device batch for torch.as_tensor (CUDA array interface v3); keeps
    the connection, and so the IPC mapping, alive while tensors use it."""

    __slots__ = ("__cuda_array_interface__", "owner")

    def __init__(self, address, shape, typestr, owner):
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (address, False), "version": 3,
                                         "strides": None}


class Stream:
    """A connection with one open stream. opts is a filled
    struct feeder_stream_opts."""

    def __init__(self, socket: Optional[str], opts, connect_timeout: Optional[float],
                 timeout: Optional[float], ndim: int = 4, reconnect: Optional[float] = 0) -> None:
        self._owner = _Owner()
        self._conn = ffi.NULL
        self._s = ffi.NULL
        pconn = ffi.new("struct feeder **")
        path = ffi.NULL if socket is None else ffi.new("char[]", str(socket).encode())
        rc = lib.feeder_connect(path, _ms(connect_timeout), pconn)
        if rc:
            raise error_from(rc, last_error(ffi.NULL))
        self._conn = self._owner.conn = pconn[0]
        if reconnect is None or reconnect > 0:
            # A restarted daemon is dialled again and the stream reopened at
            # the batch after the last one delivered (feeder_set_reconnect).
            lib.feeder_set_reconnect(self._conn, max(1, _ms(reconnect)) if reconnect else -1)
        ps = ffi.new("struct feeder_stream **")
        rc = lib.feeder_stream_open(self._conn, opts, _ms(timeout), ps)
        if rc:
            exc = error_from(rc, last_error(self._conn))
            self.close()
            raise exc
        self._s = ps[0]
        info = ffi.new("struct feeder_stream_info *")
        lib.feeder_stream_info(self._s, info)
        self.id = info.id
        self.slots = info.slots
        self.batch = info.batch
        # libfeeder always describes 4 dimensions; feature batches are
        # (B, feat_dim, chunk_len, 1), which trainers want without the 1.
        self.shape = tuple(info.shape[i] for i in range(info.ndim))
        while len(self.shape) > ndim and self.shape[-1] == 1:
            self.shape = self.shape[:-1]
        self.batches = info.batches
        self.batches_per_epoch = info.batches_per_epoch
        self.samples = info.samples
        self.classes = info.classes
        self.dtype = NUMPY_DTYPE.get(info.dtype)
        if self.dtype is None:
            exc = error_from(lib.FEEDER_EPROTO, "feederd announced unknown dtype %d" % info.dtype)
            self.close()
            raise exc
        self._typestr = self.dtype.str
        self._slot_views = {}
        self._sample_shape = self.shape[1:]

    def _info(self):
        info = ffi.new("struct feeder_stream_info *")
        lib.feeder_stream_info(self._s, info)
        return info

    @property
    def ring_address(self) -> int:
        """Address of the current ring (a reconnect maps a new one)."""
        return int(ffi.cast("uintptr_t", self._info().ring))

    @property
    def ring_size(self) -> int:
        return self._info().ring_size

    @property
    def memory(self) -> int:
        """lib.FEEDER_MEMORY_HOST or _DEVICE: where this stream's batches are."""
        return self._info().memory

    def wait_on(self, b, cuda_stream: int) -> None:
        """feeder_batch_wait: cuda_stream (an int handle) waits for b."""
        rc = lib.feeder_batch_wait(self._s, b, ffi.cast("void *", cuda_stream))
        if rc:
            raise error_from(rc, last_error(self._conn))

    def release_on(self, b, cuda_stream: int) -> None:
        """feeder_batch_release_on: b's slot goes back after cuda_stream's work."""
        rc = lib.feeder_batch_release_on(self._s, b, ffi.cast("void *", cuda_stream))
        if rc and rc != lib.FEEDER_ECLOSED:
            raise error_from(rc, last_error(self._conn))

    def device_view(self, b) -> "_DeviceSlot":
        """An object with __cuda_array_interface__ over a device batch."""
        return _DeviceSlot(int(ffi.cast("uintptr_t", b.data)),
                           (b.count,) + self._sample_shape, self._typestr, self._owner)

    def indices(self, b) -> np.ndarray:
        """The dataset index of each sample of batch b: an owned uint64 array."""
        addr = int(ffi.cast("uintptr_t", b.indices))
        return np.asarray(_SlotMemory(self._owner, addr, (b.count,), "<u8")).copy()

    def names(self, b) -> List[str]:
        """The name of each sample of batch b (the stream was opened with
        names): a list of str, "" where the dataset keeps none."""
        if b.names == ffi.NULL:
            return [""] * b.count
        raw = ffi.buffer(b.names, b.count * lib.FEEDER_SAMPLE_NAME_MAX)[:]
        size = lib.FEEDER_SAMPLE_NAME_MAX
        return [raw[i * size:(i + 1) * size].split(b"\0", 1)[0].decode("utf-8", "replace")
                for i in range(b.count)]

    def views_labels(self, b) -> np.ndarray:
        """The labels of batch b (host memory) as a NumPy array, no copy."""
        laddr = int(ffi.cast("uintptr_t", b.labels))
        return np.asarray(_SlotMemory(self._owner, laddr, (b.count,), _LABEL_DTYPE.str))

    @property
    def reconnects(self) -> int:
        return lib.feeder_get_reconnects(self._conn)

    def next(self, timeout: Optional[float]):
        """The next batch (a struct feeder_batch cdata), or None after the
        last one. Raises the matching FeederError, or DaemonTimeoutError when
        nothing arrives within timeout seconds (None: wait forever)."""
        b = ffi.new("struct feeder_batch *")
        rc = lib.feeder_stream_next(self._s, 0, b)
        if rc == lib.FEEDER_ETIMEDOUT:
            deadline = None if timeout is None else time.monotonic() + timeout
            while rc == lib.FEEDER_ETIMEDOUT:
                wait = _SLICE_MS
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise DaemonTimeoutError(
                            "no batch from feederd within %g s (stream %d); the daemon is "
                            "alive but not delivering" % (timeout, self.id),
                            lib.FEEDER_ETIMEDOUT)
                    wait = min(wait, max(1, int(left * 1000)))
                rc = lib.feeder_stream_next(self._s, wait, b)
        if rc == 0:
            return b
        if rc == lib.FEEDER_EEND:
            return None
        raise error_from(rc, last_error(self._conn))

    def release(self, b) -> None:
        """Give b's slot back. A daemon that is gone needs nothing back."""
        rc = lib.feeder_batch_release(self._s, b)
        if rc and rc != lib.FEEDER_ECLOSED:
            raise error_from(rc, last_error(self._conn))

    def pin(self) -> int:
        """feeder_stream_pin: 0 or libfeeder's code (FEEDER_ENODEV without CUDA)."""
        rc = lib.feeder_stream_pin(self._s)
        if rc and rc != lib.FEEDER_ENODEV:
            raise error_from(rc, last_error(self._conn))
        return rc

    def on_close(self, fn: Callable[[], None]) -> None:
        """Call fn() before the ring is unmapped (e.g. to unregister it)."""
        self._owner.closers.append(fn)

    def views(self, b) -> Tuple[np.ndarray, np.ndarray]:
        """(data, labels) NumPy arrays over batch b's slot, no copy. Each
        slot's full-batch arrays are made once; a batch gets slices of them
        (a new array object each time, about a microsecond)."""
        count = b.count
        addr = int(ffi.cast("uintptr_t", b.data))
        full = self._slot_views.get(b.slot)
        if full is None or full[0] != addr:
            laddr = int(ffi.cast("uintptr_t", b.labels))
            data = np.asarray(_SlotMemory(self._owner, addr, (self.batch,) + self._sample_shape,
                                          self._typestr))
            labels = np.asarray(_SlotMemory(self._owner, laddr, (self.batch,), _LABEL_DTYPE.str))
            full = self._slot_views[b.slot] = (addr, data, labels)
        return full[1][:count], full[2][:count]

    def close(self) -> None:
        """Unmap and disconnect now: only for a Stream no view has seen
        (the normal end is _Owner's finalizer)."""
        self._s = ffi.NULL
        self._owner.close()
