"""push_boto3.py — the peer of `packer push` in tests/bench/push.sh: the
files of a folder uploaded the way `aws s3 cp --recursive` does it, every
file submitted to one s3transfer TransferManager (boto3's upload engine)
with max_concurrency threads, multipart above the threshold in parts of
the chunk size. Prints "SECONDS BYTES FILES".

usage: push_boto3.py DIR BUCKET PREFIX CONCURRENCY PART_SIZE
(AWS_ENDPOINT_URL, the keys and AWS_REGION from the environment)
"""
import os
import sys
import time

import boto3
from botocore.config import Config
from boto3.s3.transfer import TransferConfig
from s3transfer.manager import TransferManager


def main(folder, bucket, prefix, concurrency, part_size):
    n, part = int(concurrency), int(part_size)
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                          region_name=os.environ.get("AWS_REGION", "us-east-1"),
                          config=Config(max_pool_connections=n + 2))
    cfg = TransferConfig(max_concurrency=n, multipart_threshold=part, multipart_chunksize=part,
                         use_threads=True)
    files = sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f)))
    total = sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    t0 = time.monotonic()
    with TransferManager(client, cfg) as tm:
        futures = [tm.upload(os.path.join(folder, f), bucket, prefix + "/" + f) for f in files]
        for fu in futures:
            fu.result()
    print("%.3f %d %d" % (time.monotonic() - t0, total, len(files)))


if __name__ == "__main__":
    main(*sys.argv[1:])
