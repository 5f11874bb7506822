"""fault_client.py — the remote fault tests' client: one epoch of a dataset
through feeder.Loader (unshuffled, eval crop, uint8), every delivered
sample printed, then how the stream ended.

usage: fault_client.py SOCKET DATASET [--batch B] [--epoch E]
                       [--sleep MS] [--ready FILE]

Prints "S INDEX LABEL CRC" per sample (CRC: zlib.crc32 of its pixels, the
same for the same record whichever dataset serves it), then one line:
"END ok SAMPLES REPLACEMENTS" or "END error CLASS CODE MESSAGE" (or
"END refused ..." when the stream could not be opened). --sleep: ms after
each batch (a slow trainer, so that a test can act mid-epoch); --ready:
touched after the first batch. Exit 0 whenever it printed an END line.
"""
import argparse
import sys
import time
import zlib

import feeder


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("dataset")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--sleep", type=int, default=0)
    ap.add_argument("--ready")
    a = ap.parse_args()
    out = sys.stdout
    try:
        ld = feeder.Loader(a.dataset, a.batch, pipeline=feeder.Jpeg(32, train=False),
                           epoch=a.epoch, dtype="uint8", socket=a.socket, timeout=120,
                           return_index=True)
    except feeder.FeederError as e:
        out.write("END refused %s %d %s\n" % (type(e).__name__, e.code, e))
        return 0
    n = 0
    try:
        for data, labels, index in ld:
            for i in range(len(labels)):
                out.write("S %d %d %08x\n" % (int(index[i]), int(labels[i]),
                                              zlib.crc32(data[i].tobytes())))
                n += 1
            out.flush()
            if a.ready and n == len(labels):
                open(a.ready, "w").close()
            if a.sleep:
                time.sleep(a.sleep / 1000.0)
    except feeder.FeederError as e:
        out.write("END error %s %d %s\n" % (type(e).__name__, e.code, e))
        return 0
    out.write("END ok %d %d\n" % (n, ld.replacements))
    return 0


if __name__ == "__main__":
    sys.exit(main())
