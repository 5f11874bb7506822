"""_cuda.py — device="cuda" for the Loader: copies of each batch from the
(pinned) ring to the GPU on a side CUDA stream, so that the copy of batch
i+1 overlaps the trainer's compute on batch i.

Each stream's ring is page-locked once, by feeder_stream_pin (cudaHostRegister in
libfeeder) or, when libfeeder was built without CUDA, by the same call through
torch's CUDA runtime; only then is copy_(non_blocking=True) a real
asynchronous DMA. A batch handed out is made safe for the trainer's current
CUDA stream with wait_event (the compute waits for the copy, the CPU does
not) and record_stream (the caching allocator does not reuse its memory while
that stream may still read it).
"""
from .errors import FeederError, OptionError


def _torch():
    try:
        import torch
    except ImportError:
        raise OptionError("device=%r needs PyTorch, which is not installed" % "cuda") from None
    return torch


class DeviceCopier:
    def __init__(self, device):
        torch = _torch()
        self.torch = torch
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise OptionError("device %r: %s" % (device, e)) from None
        if self.device.type != "cuda":
            raise OptionError("device must be None (host arrays) or a CUDA device, not %r" % (device,))
        if not torch.cuda.is_available():
            raise OptionError("device=%r, but PyTorch sees no CUDA device" % (device,))
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.side = torch.cuda.Stream(self.device)

    def prepare(self, stream):
        """Pin stream's ring for the life of the stream."""
        if stream.pin() == 0:
            return
        cudart = self.torch.cuda.cudart()
        with self.torch.cuda.device(self.device):
            rc = cudart.cudaHostRegister(stream.ring_address, stream.ring_size, 0)
        if int(rc) != 0:
            raise FeederError("cannot pin the ring of stream %d (%d bytes) for CUDA: cudaHostRegister "
                              "returned %d" % (stream.id, stream.ring_size, int(rc)))
        addr = stream.ring_address
        stream.on_close(lambda: cudart.cudaHostUnregister(addr))

    def start(self, data, labels):
        """Launch the copies of host arrays (data, labels) on the side
        stream; returns the pending (device data, device labels, event)."""
        torch = self.torch
        with torch.cuda.stream(self.side):
            d = torch.from_numpy(data).to(self.device, non_blocking=True)
            lab = torch.from_numpy(labels).to(self.device, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(self.side)
        return d, lab, ev

    def finish(self, pending):
        """Hand a pending copy to the trainer's current stream."""
        d, lab, ev = pending
        cur = self.torch.cuda.current_stream(self.device)
        cur.wait_event(ev)
        d.record_stream(cur)
        lab.record_stream(cur)
        return d, lab
