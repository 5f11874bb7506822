"""remote_bench.py — the Python steps of tests/bench/remote.sh.

  dump DATASET OUT       the JPEG payloads of a packed dataset (one data.mdb)
                         written as OUT/<class>/<n>.jpg: packer's resize done
                         once, so that a dataset of many copies packs without
                         decoding the large originals again (python3-lmdb)
  ranges BUCKET KEY RECORD PARALLEL ROUNDS
                         one object fetched whole (one GET) against the same
                         bytes as GETs of RECORD bytes each (Range), one after
                         another and PARALLEL at once, through one boto3
                         client (keep-alive); prints one JSON object: per way,
                         the median seconds of ROUNDS, MB/s and requests/s.
                         Run with moto's venv (boto3); reads AWS_* as
                         tests/lib/s3_server.sh exports them
"""
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def dump(dataset, out):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from feeder_lmdb import FeederLMDB

    ds = FeederLMDB(dataset)
    for i in range(len(ds)):
        label, payload = ds.get(i)[:2]
        d = os.path.join(out, str(label))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{i}.jpg"), "wb") as f:
            f.write(payload)


def ranges(bucket, key, record, parallel, rounds):
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      region_name=os.environ.get("AWS_REGION", "us-east-1"),
                      config=Config(max_pool_connections=max(10, parallel)))
    size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    spans = [(o, min(o + record, size) - 1) for o in range(0, size, record)]

    def whole():
        return len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())

    def one(span):
        r = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={span[0]}-{span[1]}")
        return len(r["Body"].read())

    def seq():
        return sum(one(s) for s in spans)

    pool = ThreadPoolExecutor(parallel)

    def par():
        return sum(pool.map(one, spans))

    whole()  # the connection opened, moto's first-request costs paid
    res = {"object_bytes": size, "record_bytes": record, "requests": len(spans)}
    for name, fn, requests in (("whole", whole, 1), ("ranges_sequential", seq, len(spans)),
                               (f"ranges_parallel_{parallel}", par, len(spans))):
        secs = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            got = fn()
            secs.append(time.perf_counter() - t0)
            if got != size:
                sys.exit(f"remote_bench: {name} read {got} bytes of {size}")
        s = statistics.median(secs)
        res[name] = {"seconds": s, "mb_per_s": size / s / 1e6, "requests_per_s": requests / s}
    pool.shutdown()
    print(json.dumps(res))


def main(argv):
    if len(argv) == 4 and argv[1] == "dump":
        dump(argv[2], argv[3])
    elif len(argv) == 7 and argv[1] == "ranges":
        ranges(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
