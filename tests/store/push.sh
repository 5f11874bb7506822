#!/usr/bin/env bash
# push.sh — `packer push` to a real S3 server (moto on 127.0.0.1, checking
# every signature): a single-file dataset (one data.mdb, larger than the
# part size: a multipart upload of 3 parts) and a sharded one (several
# shards at once); every object read back with boto3 and compared with the
# local files, the manifest with the shards' sizes and CRCs (and, for the
# sharded dataset, byte for byte with its own manifest). Bad URLs and
# bucket names are refused with exit 2 before any request.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
need_exe "$packer"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"

# 150 photo-like JPEGs stored as they are: ~13 MB.
gen_images "$tmp/src" 150 4 1
pack_images one "$tmp/src" --restart none
pack_images sharded "$tmp/src" --restart none --shard-size 2M
[ -f "$datasets/sharded/feeder.manifest" ] || fail "pack --shard-size wrote no manifest"
size=$(stat -c %s "$datasets/one/data.mdb")
[ "$size" -gt $((10 << 20)) ] && [ "$size" -le $((15 << 20)) ] \
	|| fail "data.mdb is $size bytes, wanted 10-15 MiB (3 parts of 5 MiB)"

expect_rc 0 "$packer" push "$datasets/one" s3://bkt/ds/one --part-size 5M --jobs 3
grep -q "^pushed 1 shard ($size bytes) and feeder.manifest to s3://bkt/ds/one$" "$tmp/out" \
	|| fail "push's summary: $(cat "$tmp/out")"
"$s3_venv/bin/python" "$here/push_check.py" bkt ds/one "$datasets/one" >"$tmp/check1" \
	|| fail "single-file push: $(cat "$tmp/check1")"
grep -q "^ds/one/data.mdb $size bytes" "$tmp/check1" || fail "$(cat "$tmp/check1")"
grep -q "1 shards, 150 samples" "$tmp/check1" || fail "$(cat "$tmp/check1")"
[ "$(s3_py uploads bkt)" = 0 ] || fail "multipart uploads left open"
# The manifest made for a single data.mdb carries its header: the one
# reshard copies into a sharded dataset's manifest.
"$packer" reshard "$datasets/one" "$tmp/resharded" --shard-size 1G >/dev/null 2>&1 || fail "reshard"
s3_py get bkt ds/one/feeder.manifest "$tmp/one.manifest" || fail "boto3 get of the manifest"
[ "$(sed -n 2p "$tmp/one.manifest")" = "$(sed -n 2p "$tmp/resharded/feeder.manifest")" ] \
	|| fail "the pushed manifest's header line is not the dataset's"

nshards=$(sed -n 's/^shards //p' "$datasets/sharded/feeder.manifest")
[ "$nshards" -ge 4 ] || fail "only $nshards shards of 2M"
expect_rc 0 "$packer" push "$datasets/sharded" s3://bkt/ds/sharded/ --jobs 4
"$s3_venv/bin/python" "$here/push_check.py" bkt ds/sharded "$datasets/sharded" \
	"$datasets/sharded/feeder.manifest" >"$tmp/check2" || fail "sharded push: $(cat "$tmp/check2")"
grep -q "$nshards shards, 150 samples" "$tmp/check2" || fail "$(cat "$tmp/check2")"

# Refused before any request: exit 2, one line naming the thing.
expect_rc 2 "$packer" push "$datasets/one" http://bkt/x
grep -q "is not an s3://bucket/prefix URL" "$tmp/err" || fail "http URL: $(cat "$tmp/err")"
expect_rc 2 "$packer" push "$datasets/one" s3://Bad_Bucket/x
grep -q "bucket name 'Bad_Bucket' is not 3 to 63" "$tmp/err" || fail "bad bucket: $(cat "$tmp/err")"
expect_rc 2 "$packer" push "$datasets/one" s3://ab/x
expect_rc 2 "$packer" push "$datasets/one"
expect_rc 2 "$packer" push "$datasets/one" s3://bkt/x --part-size 1M
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "more than one line: $(cat "$tmp/err")"
# A bucket that does not exist: a runtime failure naming the object.
expect_rc 1 "$packer" push "$datasets/one" s3://no-such-bucket/x
grep -q "s3://no-such-bucket/x/data.mdb: no such bucket" "$tmp/err" \
	|| fail "missing bucket: $(cat "$tmp/err")"
# ...and as a multipart upload whose begin fails while two other threads
# wait for it: still the bucket's error, not theirs.
expect_rc 1 "$packer" push "$datasets/one" s3://no-such-bucket/x --part-size 5M --jobs 3
[ "$(cat "$tmp/err")" = "packer: push: s3://no-such-bucket/x/data.mdb: no such bucket (404 NoSuchBucket) (no manifest written)" ] \
	|| fail "missing bucket, multipart: $(cat "$tmp/err")"
echo "push: single-file (3 parts) and $nshards-shard datasets pushed and read back"
