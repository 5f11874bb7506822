#!/usr/bin/env bash
# push_fail.sh — a push that fails midway publishes nothing: (1) a part of
# a multipart upload refused (a fault server, tests/store/fault_server.py):
# exit 1, one line naming the object and the reason, the upload aborted,
# nothing sent after it (no manifest);
# (2) the server killed mid-push: exit 1 after the retries, naming the
# object and the endpoint, within a bounded time, and no manifest was ever
# sent.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
need_exe "$packer"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"

gen_images "$tmp/src" 150 4 1
pack_images big "$tmp/src" --restart none --shard-size 6M
ds=$datasets/big
[ "$(sed -n 's/^shards //p' "$ds/feeder.manifest")" -ge 3 ] || fail "wanted 3 shards: $(cat "$ds/feeder.manifest")"
first=$(sed -n 's/^shard \([^ ]*\) .*/\1/p' "$ds/feeder.manifest" | sed -n 1p)
[ "$(stat -c %s "$ds/$first")" -gt $((5 << 20)) ] || fail "the first shard is not over 5 MiB"
spawn "$tmp/fault.log" "$s3_venv/bin/python" "$here/fault_server.py" "$tmp/fault.port" deny-part:2
wait_until 10 test -s "$tmp/fault.port" || fail "fault_server did not start: $(cat "$tmp/fault.log")"
AWS_ENDPOINT_URL=http://127.0.0.1:$(cat "$tmp/fault.port") expect_rc 1 "$packer" push "$ds" s3://bkt/broken --part-size 5M --jobs 1
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "not one line: $(cat "$tmp/err")"
grep -q "^packer: push: s3://bkt/broken/$first: access denied (403 AccessDenied) for access key $AWS_ACCESS_KEY_ID (no manifest written)$" "$tmp/err" \
	|| fail "denied part: $(cat "$tmp/err")"
printf '%s\n' "POST /bkt/broken/$first?uploads= " "PUT /bkt/broken/$first?partNumber=1&uploadId=u-1 " \
	"PUT /bkt/broken/$first?partNumber=2&uploadId=u-1 " "DELETE /bkt/broken/$first?uploadId=u-1 " \
	| diff - "$tmp/fault.log" >&2 || fail "wanted begin, part 1, part 2 (denied), abort and nothing else"

# (2) Many small shards, one at a time; moto killed after a few.
pack_images many "$tmp/src" --restart none --shard-size 64K
n=$(sed -n 's/^shards //p' "$datasets/many/feeder.manifest")
[ "$n" -ge 100 ] || fail "only $n shards of 64K"
spawn "$tmp/push.log" "$packer" push "$datasets/many" s3://bkt/many --jobs 1
push_pid=$spawned
puts() { [ "$(grep -c 'PUT /bkt/many/' "$s3_log")" -ge 5 ]; }
wait_until 30 puts || fail "the push made no progress: $(cat "$tmp/push.log")"
cp "$s3_log" "$tmp/moto-at-kill.log"
s3_stop
t0=$SECONDS
wait_until 20 exited "$push_pid" || fail "push still running 20 s after the server died"
wait "$push_pid"
rc=$?
[ $rc = 1 ] || fail "push exited $rc after the server died: $(cat "$tmp/push.log")"
grep -q "^packer: push: s3://bkt/many/[^ ]*: http://127.0.0.1:$s3_port: .* (after retries) (no manifest written)$" "$tmp/push.log" \
	|| fail "dead server: $(cat "$tmp/push.log")"
grep -q "feeder.manifest" "$tmp/moto-at-kill.log" "$s3_log" && fail "the manifest was sent"
echo "push_fail: part refused (aborted, no manifest), server killed after $(grep -c 'PUT /bkt/many/' "$tmp/moto-at-kill.log") of $n shards (failed in $((SECONDS - t0)) s)"
