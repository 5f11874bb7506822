"""push_check.py — what `packer push` left in the bucket, read with boto3:
every object under PREFIX must be a shard file of DATASET byte for byte
or the manifest, and the manifest must list exactly those shards with
their sizes and CRC-32C, the header of the dataset and a sample range
covering it. Run with the moto venv's Python (it has boto3).

usage: push_check.py BUCKET PREFIX DATASET [LOCAL_MANIFEST]
LOCAL_MANIFEST: the dataset's own manifest (a sharded dataset's), which
the pushed one must equal byte for byte. Prints one line per object.
"""
import os
import sys

import boto3

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "python"))
from crc32c import crc32c  # noqa: E402


def main(bucket, prefix, dataset, local_manifest=None):
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                      region_name=os.environ.get("AWS_REGION", "us-east-1"))
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
    keys = sorted(o["Key"] for p in pages for o in p.get("Contents", []))
    man_key = prefix + "/feeder.manifest"
    if man_key not in keys:
        sys.exit("push_check: no %s among %s" % (man_key, keys))
    text = s3.get_object(Bucket=bucket, Key=man_key)["Body"].read()
    if local_manifest and open(local_manifest, "rb").read() != text:
        sys.exit("push_check: the pushed manifest differs from " + local_manifest)
    lines = text.decode().split("\n")
    if lines[0] != "feeder-manifest 1" or lines[-1] != "" or lines[-2] != "end":
        sys.exit("push_check: manifest framing: %r ... %r" % (lines[0], lines[-2:]))
    nshards = int(lines[2].split()[1])
    shards = [l.split() for l in lines[3:3 + nshards]]
    want = sorted([prefix + "/" + s[1] for s in shards] + [man_key])
    if keys != want:
        sys.exit("push_check: objects %s, manifest names %s" % (keys, want))
    first = 0
    for _, name, start, count, size, crc in shards:
        local = open(os.path.join(dataset, name), "rb").read()
        remote = s3.get_object(Bucket=bucket, Key=prefix + "/" + name)["Body"].read()
        if remote != local:
            sys.exit("push_check: %s/%s differs from the local file" % (prefix, name))
        if int(size) != len(local) or int(crc, 16) != crc32c(local) or int(start) != first:
            sys.exit("push_check: manifest line for %s: %s %s %s, file %d bytes crc %08x"
                     % (name, start, size, crc, len(local), crc32c(local)))
        first += int(count)
        print("%s/%s %d bytes, crc32c %s, samples %s..%d" % (prefix, name, len(local), crc,
                                                            start, first - 1))
    print("%s: %d shards, %d samples" % (man_key, nshards, first))


if __name__ == "__main__":
    main(*sys.argv[1:])
