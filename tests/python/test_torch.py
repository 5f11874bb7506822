"""test_torch.py — the Loader in a PyTorch trainer: as_torch yields tensors
that share the slot's memory and equal the NumPy batches; the README's
training loops (images, TDNN features) run; device="cuda" gives device
tensors equal to the host batches (skipped without a CUDA device)."""
import numpy as np
import pytest
import torch

import feeder

SIZE = 32


def test_as_torch_zero_copy(daemon):
    ref = [(d.copy(), lab.copy()) for d, lab in
           feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=6, socket=daemon.sock)]
    ld = feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=6, socket=daemon.sock,
                       as_torch=True)
    base, size = ld.ring
    n = 0
    for (x, y), (rd, rl) in zip(ld, ref):
        assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
        assert y.dtype == torch.int32 and tuple(x.shape) == (8, 3, SIZE, SIZE)
        assert base <= x.data_ptr() and x.data_ptr() + x.numel() * 4 <= base + size
        assert np.array_equal(x.numpy(), rd) and np.array_equal(y.numpy(), rl)
        n += 1
    assert n == len(ref) == 5


def test_image_training_loop(daemon):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), dtype="float32",
                           socket=daemon.sock, as_torch=True)
    losses = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        for images, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(images), labels.long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert len(losses) == 10 and all(np.isfinite(losses))


def test_tdnn_training_loop(speech):
    loader = feeder.Loader("speech", 4, pipeline=feeder.Features(chunk_len=40),
                           dtype="float32", socket=speech.sock, as_torch=True, shuffle=True)
    dim = loader.shape[1]
    model = torch.nn.Sequential(torch.nn.Conv1d(dim, 16, 5), torch.nn.ReLU(),
                                torch.nn.Conv1d(16, 16, 3, dilation=2), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool1d(1), torch.nn.Flatten(),
                                torch.nn.Linear(16, loader.classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    steps = 0
    for feats, spk in loader:
        assert tuple(feats.shape) == (4, dim, 40)
        loss = torch.nn.functional.cross_entropy(model(feats), spk.long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert np.isfinite(loss.item())
        steps += 1
    assert steps == len(loader) == 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA device")
def test_cuda_device_tensors(daemon):
    host = [(d.copy(), lab.copy()) for d, lab in
            feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=8, socket=daemon.sock)]
    ld = feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=8, socket=daemon.sock,
                       device="cuda")
    got = [(x.float().sum(), x.cpu().numpy(), y.cpu().numpy()) for x, y in ld]
    assert len(got) == len(host)
    for (_, x, y), (hd, hl) in zip(got, host):
        assert np.array_equal(x, hd) and np.array_equal(y, hl)
    # Resume works the same on the device path.
    ld.load_state_dict({**ld.state_dict(), "next_batch": 3})
    rest = [x.cpu().numpy() for x, _ in ld]
    assert [r.tobytes() for r in rest] == [h.tobytes() for h, _ in host[3:]]


class _HostCopier:
    """Stands in for _cuda.DeviceCopier where there is no GPU, so that the
    Loader's device iteration (copy of batch i+1 launched before batch i is
    handed out, slots released only after their copy) runs here too. Its
    "copy" is a real copy into a new tensor; the event checks the order."""

    def __init__(self):
        self.started = self.finished = self.synced = 0

    def prepare(self, stream):
        pass

    def start(self, data, labels):
        copier = self

        class Event:
            def synchronize(self):
                copier.synced += 1
        self.started += 1
        return torch.from_numpy(data.copy()), torch.from_numpy(labels.copy()), Event()

    def finish(self, pending):
        self.finished += 1
        assert self.started == self.finished + 1 or self.started == self.finished
        return pending[0], pending[1]


def test_device_iteration_order_without_gpu(daemon):
    host = [(d.copy(), lab.copy()) for d, lab in
            feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=8, slots=2,
                          socket=daemon.sock)]
    ld = feeder.Loader("imgs", 8, pipeline=feeder.Jpeg(SIZE), seed=8, slots=2,
                       socket=daemon.sock, timeout=10)
    cp = ld._copier = _HostCopier()
    got = []
    for x, y in ld:
        # Batch i+1 is already being "copied" while batch i is in use.
        assert cp.started == min(len(got) + 2, len(host))
        got.append((x.numpy(), y.numpy()))
    assert len(got) == len(host) and cp.finished == len(host)
    for (x, y), (hd, hl) in zip(got, host):
        assert np.array_equal(x, hd) and np.array_equal(y, hl)
    # With 2 slots, a release missing anywhere would have stalled the stream
    # into a timeout above; resuming mid-epoch works on this path too.
    ld.load_state_dict({**ld.state_dict(), "next_batch": 2})
    rest = [x.numpy().tobytes() for x, _ in ld]
    assert rest == [h.tobytes() for h, _ in host[2:]]
