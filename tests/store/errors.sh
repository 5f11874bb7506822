#!/usr/bin/env bash
# errors.sh — the S3 client's failures, each one line naming the object and
# the reason: no credentials; a missing object and bucket (-ENOENT); a wrong
# secret and an unknown key (403, moto checking signatures); a server not
# listening (after the retries, naming the endpoint, in bounded time);
# 503 SlowDown retried to success; a 500 that never stops; a body cut short
# mid-transfer resumed by a Range request; an error inside a multipart
# complete's 200 (retried or not by its Code); and the secret key in none of
# the output of any of these runs (nor of a failed packer push).
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
need_exe "$s3_tool_exe" "$packer"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"
secret=$AWS_SECRET_ACCESS_KEY
all=$tmp/all-output
: >"$all"
# run_tool WANT_RC ARGS...: s3_tool, its output kept in $tmp/err and $all.
run_tool() {
	local want=$1 rc
	shift
	s3_tool "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" >>"$all"
	[ "$rc" = "$want" ] || fail "s3_tool $* exited $rc, wanted $want: $(cat "$tmp/err")"
}
# the_error PATTERN: s3_tool's one error line matches.
the_error() {
	[ "$(grep -c '^s3_tool: ' "$tmp/err")" = 1 ] || fail "not one error line: $(cat "$tmp/err")"
	grep -q "^s3_tool: $1" "$tmp/err" || fail "wanted '$1', got: $(cat "$tmp/err")"
}

head -c 1000 /dev/urandom >"$tmp/obj"
run_tool 0 put bkt obj "$tmp/obj"

# No credentials anywhere: the variables and the file named.
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	export AWS_SHARED_CREDENTIALS_FILE=$tmp/nowhere
	run_tool 1 head bkt obj
	the_error "no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and the profile 'default' of $tmp/nowhere is not there (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)$"
	expect_rc 2 "$packer" push "$tmp" s3://bkt/x
	grep -q "^packer: push: no S3 credentials: AWS_ACCESS_KEY_ID" "$tmp/err" || fail "packer: $(cat "$tmp/err")"
) || exit 1

run_tool 1 get bkt nothing-here "$tmp/got"
the_error "s3://bkt/nothing-here: no such object (404 NoSuchKey)$"
run_tool 1 get no-such-bucket obj "$tmp/got"
the_error "s3://no-such-bucket/obj: no such bucket (404 NoSuchBucket)$"
run_tool 1 head bkt nothing-here
the_error "s3://bkt/nothing-here: no such object (404)$"

AWS_SECRET_ACCESS_KEY=not-the-secret run_tool 1 get bkt obj "$tmp/got"
the_error "s3://bkt/obj: access denied (403 SignatureDoesNotMatch) for access key $AWS_ACCESS_KEY_ID$"
AWS_ACCESS_KEY_ID=AKIANOSUCHKEY0000000 run_tool 1 put bkt obj2 "$tmp/obj"
the_error "s3://bkt/obj2: access denied (403 InvalidAccessKeyId) for access key AKIANOSUCHKEY0000000$"

# Nothing listening: connection refused, retried (6 tries, backoff capped),
# then an error naming the endpoint.
dead=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
t0=$SECONDS
AWS_ENDPOINT_URL=http://127.0.0.1:$dead run_tool 1 get bkt obj "$tmp/got"
[ $((SECONDS - t0)) -le 10 ] || fail "giving up on a dead endpoint took $((SECONDS - t0)) s"
the_error "s3://bkt/obj: http://127.0.0.1:$dead: .*[Cc]onnect.* (after retries)$"
grep -q "^retries 5$" "$tmp/err" || fail "retries against a dead endpoint: $(cat "$tmp/err")"

# fault_server MODE: a misbehaving endpoint, AWS_ENDPOINT_URL pointing at it.
fault_server() {
	rm -f "$tmp/fault.port"
	s3_stop_fault
	spawn "$tmp/fault.log" "$s3_venv/bin/python" "$here/fault_server.py" "$tmp/fault.port" "$1"
	fault_pid=$spawned
	wait_until 10 test -s "$tmp/fault.port" || fail "fault_server did not start: $(cat "$tmp/fault.log")"
	fault_url=http://127.0.0.1:$(cat "$tmp/fault.port")
}
fault_pid=
s3_stop_fault() { [ -z "$fault_pid" ] || { kill -9 "$fault_pid"; wait "$fault_pid"; } 2>/dev/null; }
"$s3_venv/bin/python" -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) & 0xFF for i in range(1 << 20)))' >"$tmp/pattern"

fault_server slowdown:2
AWS_ENDPOINT_URL=$fault_url run_tool 0 get bkt obj "$tmp/got"
cmp "$tmp/pattern" "$tmp/got" || fail "after SlowDown: bytes differ"
grep -q "^retries 2$" "$tmp/err" || fail "2 SlowDowns: $(cat "$tmp/err")"

fault_server status:500
AWS_ENDPOINT_URL=$fault_url run_tool 1 put bkt obj "$tmp/obj"
the_error "s3://bkt/obj: PUT failed (HTTP 500 InternalError) (after retries)$"
grep -q "^retries 5$" "$tmp/err" || fail "a lasting 500: $(cat "$tmp/err")"
[ "$(grep -c '^PUT /bkt/obj' "$tmp/fault.log")" = 6 ] || fail "not 6 tries: $(cat "$tmp/fault.log")"

fault_server truncate
AWS_ENDPOINT_URL=$fault_url run_tool 0 get-range bkt obj 1000 800000 "$tmp/got"
cmp <(tail -c +1001 "$tmp/pattern" | head -c 800000) "$tmp/got" || fail "resumed range differs"
grep -q "^retries 1$" "$tmp/err" || fail "resume: $(cat "$tmp/err")"
# The checksum taken while the body came (what the shard cache checks)
# covers the resumed bytes once each.
crc=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from crc32c import crc32c
print("%08x" % crc32c(open(sys.argv[2], "rb").read()))' "$src/tests/lib/python" "$tmp/got")
grep -q "^crc32c $crc$" "$tmp/err" || fail "resume: the CRC taken is not the file's $crc: $(cat "$tmp/err")"
grep -q "^GET /bkt/obj bytes=1000-800999$" "$tmp/fault.log" && grep -q "^GET /bkt/obj bytes=401000-800999$" "$tmp/fault.log" \
	|| fail "the resume did not ask for the rest: $(cat "$tmp/fault.log")"

# A CompleteMultipartUpload that fails after its 200 (the error is the
# body): InternalError retried, InvalidPart not.
head -c $((6 << 20)) /dev/urandom >"$tmp/six"
fault_server complete-error:InternalError:1
AWS_ENDPOINT_URL=$fault_url run_tool 0 multipart bkt mp "$tmp/six" $((5 << 20))
grep -q "^retries 1$" "$tmp/err" || fail "an InternalError in a 200: $(cat "$tmp/err")"
[ "$(grep -c '^POST /bkt/mp?uploadId=' "$tmp/fault.log")" = 2 ] || fail "complete not sent twice: $(cat "$tmp/fault.log")"
fault_server complete-error:InvalidPart:9
AWS_ENDPOINT_URL=$fault_url run_tool 1 multipart bkt mp "$tmp/six" $((5 << 20))
the_error "s3://bkt/mp: POST failed (HTTP 200 InvalidPart)$"
grep -q "^retries 0$" "$tmp/err" || fail "InvalidPart was retried: $(cat "$tmp/err")"
s3_stop_fault

# A push that fails: its output too.
gen_images "$tmp/src" 8 2 1
pack_images one "$tmp/src"
AWS_SECRET_ACCESS_KEY=not-the-secret "$packer" push "$datasets/one" s3://bkt/p >>"$all" 2>&1 && fail "push with a wrong secret succeeded"
grep -q "^packer: push: s3://bkt/p/data.mdb: access denied (403 SignatureDoesNotMatch)" "$all" || fail "push: $(tail -n 2 "$all")"

grep -qF -- "$secret" "$all" && fail "the secret key was printed: $(grep -F -- "$secret" "$all" | head -n 1 | cut -c1-40)..."
grep -qF -- "not-the-secret" "$all" && fail "a secret key was printed"
echo "errors: $(grep -c '^s3_tool: \|^packer: ' "$all") error lines checked, the secret in none"
