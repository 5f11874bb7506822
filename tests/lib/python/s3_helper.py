"""s3_helper.py — boto3 beside the S3 tests: the bucket's view of what the
C client did, from the SDK everyone else uses. Run with the moto venv's
Python (tests/lib/s3_server.sh: s3_py), which has boto3; reads
AWS_ENDPOINT_URL, the keys and AWS_REGION from the environment.

  auth-user                 an IAM user allowed everything, its keys printed
                            as "KEY_ID SECRET" (moto's first actions run
                            unauthenticated, every later one is checked)
  mb BUCKET                 create a bucket
  rb BUCKET                 delete a bucket and everything in it
  ls BUCKET [PREFIX]        "key size" per object, sorted
  get BUCKET KEY FILE       download an object
  put BUCKET KEY FILE       upload an object
  uploads BUCKET            the number of multipart uploads in progress
"""
import json
import os
import sys

import boto3


def client(service="s3"):
    return boto3.client(service, endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                        region_name=os.environ.get("AWS_REGION", "us-east-1"))


def main(argv):
    cmd, args = argv[1], argv[2:]
    s3 = client()
    if cmd == "auth-user":
        iam = client("iam")
        iam.create_user(UserName="feeder-test")
        iam.put_user_policy(UserName="feeder-test", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        k = iam.create_access_key(UserName="feeder-test")["AccessKey"]
        print(k["AccessKeyId"], k["SecretAccessKey"])
    elif cmd == "mb":
        s3.create_bucket(Bucket=args[0])
    elif cmd == "rb":
        for o in s3.list_objects_v2(Bucket=args[0]).get("Contents", []):
            s3.delete_object(Bucket=args[0], Key=o["Key"])
        s3.delete_bucket(Bucket=args[0])
    elif cmd == "ls":
        kw = {"Prefix": args[1]} if len(args) > 1 else {}
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=args[0], **kw)
        objs = [(o["Key"], o["Size"]) for p in pages for o in p.get("Contents", [])]
        for k, n in sorted(objs):
            print(k, n)
    elif cmd == "get":
        s3.download_file(args[0], args[1], args[2])
    elif cmd == "put":
        s3.upload_file(args[2], args[0], args[1])
    elif cmd == "uploads":
        print(len(s3.list_multipart_uploads(Bucket=args[0]).get("Uploads", [])))
    else:
        sys.exit("s3_helper: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
