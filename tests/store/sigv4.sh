#!/usr/bin/env bash
# sigv4.sh — the client's requests carry a valid SigV4 signature: for each
# kind of request (GET, HEAD, PUT with its checksum header, DELETE, the
# multipart POST, a key that needs escaping, a session token), one request
# captured on 127.0.0.1 is signed again by botocore (S3SigV4Auth) with the
# same credentials, region and x-amz-date, and the Authorization headers
# must be identical (tests/store/sigv4_check.py). The other store tests run
# against moto checking every signature; this one pins it to AWS's signer.
. "$(dirname "$0")/../lib/lib.sh"
need_exe "$build/tests/store/s3_tool"
venv=$("$src/tests/lib/moto_venv.sh")
rc=$?
[ $rc = 77 ] && skip "moto's venv (boto3) is not installed and pip cannot reach PyPI"
[ $rc = 0 ] || fail "cannot make the venv with boto3 (tests/lib/moto_venv.sh)"
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
export AWS_REGION=eu-central-1 FEEDER_S3_ADDRESSING=path
unset AWS_SESSION_TOKEN AWS_PROFILE
: >"$tmp/all"
head -c 70000 /dev/urandom >"$tmp/obj"
head -c $((6 << 20)) /dev/urandom >"$tmp/big"
check() {
	"$venv/bin/python" "$here/sigv4_check.py" "$build/tests/store/s3_tool" "$@" >"$tmp/check" 2>&1 \
		|| fail "s3_tool $*: $(cat "$tmp/check")"
	grep -q "^sigv4_check: identical" "$tmp/check" || fail "$(cat "$tmp/check")"
	grep "^request: " "$tmp/check" | tee -a "$tmp/all"
}
check get bkt dir/obj "$tmp/got"
check head bkt dir/obj
check put bkt dir/obj "$tmp/obj"
check put-mem bkt "a key/with space+plus=eq~(x).bin" "$tmp/obj"
check delete bkt dir/obj
check multipart bkt big "$tmp/big" $((5 << 20))
check get-range bkt dir/obj 10 100 "$tmp/got"
AWS_SESSION_TOKEN=FwoGZXIvYXdzEJr//////////session+token= check get bkt dir/obj "$tmp/got" | tee "$tmp/tok"
grep -q "x-amz-security-token" "$tmp/tok" || fail "the session token was not signed: $(cat "$tmp/tok")"
echo "sigv4: $(grep -c "^request:" "$tmp/all") requests signed as botocore signs them"
