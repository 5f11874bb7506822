#!/usr/bin/python3
"""loader_bench.py — feeder.Loader iterated from Python, the peer of
feeder-bench on the same request (jpeg pipeline, train transform, square
output), for tests/bench/vs_torch.sh.

    PYTHONPATH=$BUILD/client/python /usr/bin/python3 tests/bench/loader_bench.py \\
        --dataset images --batch 256 --size 224 --dtype float16 --batches 15 \\
        --socket /run/feeder/feederd.sock

Prints one JSON object: images_per_s (timed like feeder-bench and the
PyTorch side: from the first batch's arrival to the last batch; startup_s is
the time before, from connect), overhead_us_per_batch (the time a batch spends in the
Python layer: each next() minus the time inside libfeeder calls, i.e. the
cost Python adds over the C client), batches, and wait_us_per_batch (time
inside libfeeder, mostly waiting for the daemon). The libfeeder calls are
timed through a thin wrapper around the cffi library object; its own cost
(two clock reads per call) counts as libfeeder time. On a loaded machine the
overhead includes the time the Python thread waits for a core.
"""
import argparse
import json
import sys
import time


class _TimedLib:
    """feeder._stream's view of libfeeder with every feeder_* call timed
    (connect and open included: an epoch's new stream is libfeeder's and the
    daemon's time, not Python's). Other names are copied unchanged."""

    def __init__(self, lib):
        self.ns = 0
        for name in dir(lib):
            v = getattr(lib, name)
            if name.startswith("feeder_") and callable(v):
                v = self._timed(v)
            setattr(self, name, v)

    def _timed(self, fn):
        clock = time.perf_counter_ns

        def call(*args):
            t = clock()
            rc = fn(*args)
            self.ns += clock() - t
            return rc
        return call


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True)
    for k, v in dict(batch=32, size=224, dtype="float16", layout="NCHW", batches=100, slots=4,
                     seed=0).items():
        ap.add_argument("--" + k, type=type(v), default=v)
    ap.add_argument("--eval", action="store_true", help="resize + center crop instead of train")
    ap.add_argument("--socket", default=None)
    a = ap.parse_args()

    import feeder
    import feeder._stream as fstream
    timed = _TimedLib(fstream.lib)
    fstream.lib = timed

    try:
        return run(a, feeder, timed)
    except feeder.FeederError as e:
        print("loader_bench: %s" % e, file=sys.stderr)
        return 1


def run(a, feeder, timed):
    clock = time.perf_counter_ns
    t0 = clock()
    loader = feeder.Loader(a.dataset, a.batch, pipeline=feeder.Jpeg(a.size, train=not a.eval),
                           seed=a.seed, dtype=a.dtype, layout=a.layout, slots=a.slots,
                           socket=a.socket, drop_last=False, shuffle=True)
    setup_ns = clock() - t0
    timed.ns = 0
    n = images = 0
    in_next_ns = 0
    first_ns = first_images = None
    epoch = 0
    while True:
        it = iter(loader)
        while n < a.batches:
            t = clock()
            batch = next(it, None)
            in_next_ns += clock() - t
            if batch is None:
                break
            n += 1
            images += len(batch[1])
            if first_ns is None:
                first_ns, first_images = clock(), len(batch[1])
        if n >= a.batches:
            break
        epoch += 1
        loader.set_epoch(epoch)
    wall_ns = clock() - t0
    loader.close()
    if n == 0:
        print(json.dumps({"error": "no batch delivered"}))
        return 1
    end_ns = t0 + wall_ns
    if n > 1 and end_ns > first_ns:
        ips = (images - first_images) / ((end_ns - first_ns) / 1e9)
    else:
        ips = images / (wall_ns / 1e9)
    print(json.dumps({
        "images_per_s": round(ips, 3),
        "startup_s": round((first_ns - t0) / 1e9, 6),
        "overhead_us_per_batch": round((in_next_ns - timed.ns) / n / 1e3, 3),
        "batches": n,
        "images": images,
        "seconds": round(wall_ns / 1e9, 6),
        "setup_ms": round(setup_ns / 1e6, 3),
        "wait_us_per_batch": round(timed.ns / n / 1e3, 3),
        "epochs_started": epoch + 1,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
