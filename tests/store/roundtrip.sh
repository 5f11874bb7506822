#!/usr/bin/env bash
# roundtrip.sh — the S3 client against a real S3 server (moto on
# 127.0.0.1, checking every request's SigV4 signature): put from a file
# and from memory, head, get, ranged gets, a multipart upload of 3 parts
# (> 5 MiB), an aborted one, delete; bytes compared with cmp, the bucket's
# listing and contents compared through boto3.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
need_exe "$s3_tool_exe"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"

head -c 300000 /dev/urandom >"$tmp/small"
head -c $((12 << 20)) /dev/urandom >"$tmp/big"
: >"$tmp/empty"

s3_tool put bkt dir/small "$tmp/small" 2>"$tmp/err" || fail "put: $(cat "$tmp/err")"
s3_tool put-mem bkt "odd key/with space+plus=eq&amp~.bin" "$tmp/small" 2>"$tmp/err" \
	|| fail "put-mem: $(cat "$tmp/err")"
s3_tool put bkt empty "$tmp/empty" 2>"$tmp/err" || fail "put empty: $(cat "$tmp/err")"
[ "$(s3_tool head bkt dir/small 2>/dev/null)" = 300000 ] || fail "head: $(s3_tool head bkt dir/small 2>&1)"
[ "$(s3_tool head bkt empty 2>/dev/null)" = 0 ] || fail "head of the empty object"

s3_tool get bkt dir/small "$tmp/got" 2>"$tmp/err" || fail "get: $(cat "$tmp/err")"
cmp "$tmp/small" "$tmp/got" || fail "get: bytes differ"
s3_tool get bkt "odd key/with space+plus=eq&amp~.bin" "$tmp/got" 2>/dev/null || fail "get odd key"
cmp "$tmp/small" "$tmp/got" || fail "odd key: bytes differ"
s3_tool get bkt empty "$tmp/got" 2>/dev/null && [ ! -s "$tmp/got" ] || fail "get of the empty object"

# Ranges: the start, the middle, the very end.
for r in "0 1" "12345 100000" "299999 1" "1 299999"; do
	set -- $r
	s3_tool get-range bkt dir/small "$1" "$2" "$tmp/range" 2>"$tmp/err" \
		|| fail "get-range $r: $(cat "$tmp/err")"
	cmp <(tail -c +$(($1 + 1)) "$tmp/small" | head -c "$2") "$tmp/range" || fail "range $r differs"
done
# A range past the end is an error naming the object, not a short file.
s3_tool get-range bkt dir/small 299000 2000 "$tmp/range" 2>"$tmp/err" && fail "a range past the end succeeded"
grep -q "s3_tool: s3://bkt/dir/small: the object is shorter than byte 301000" "$tmp/err" \
	|| fail "range past the end: $(cat "$tmp/err")"

s3_tool multipart bkt big "$tmp/big" $((5 << 20)) >"$tmp/out" 2>"$tmp/err" \
	|| fail "multipart: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = "3 parts" ] || fail "multipart: $(cat "$tmp/out")"
s3_tool get bkt big "$tmp/got" 2>/dev/null || fail "get big"
cmp "$tmp/big" "$tmp/got" || fail "multipart object differs"
s3_tool get-range bkt big $((5 << 20)) $((6 << 20)) "$tmp/range" 2>/dev/null || fail "range of big"
cmp <(tail -c +$(((5 << 20) + 1)) "$tmp/big" | head -c $((6 << 20))) "$tmp/range" || fail "range of big differs"
s3_tool multipart-abort bkt aborted "$tmp/big" $((5 << 20)) >/dev/null 2>"$tmp/err" \
	|| fail "multipart-abort: $(cat "$tmp/err")"
[ "$(s3_py uploads bkt)" = 0 ] || fail "an aborted multipart upload is still open"

# boto3's view: the same objects, sizes and bytes.
s3_py ls bkt >"$tmp/ls" || fail "boto3 list"
printf '%s\n' "big $((12 << 20))" "dir/small 300000" "empty 0" "odd key/with space+plus=eq&amp~.bin 300000" \
	| diff - "$tmp/ls" >&2 || fail "boto3 lists other objects"
s3_py get bkt big "$tmp/boto-big" && cmp "$tmp/big" "$tmp/boto-big" || fail "boto3 reads other bytes"
s3_py put bkt from-boto "$tmp/big" || fail "boto3 put"
s3_tool get bkt from-boto "$tmp/got" 2>/dev/null && cmp "$tmp/big" "$tmp/got" || fail "boto3's object differs"

s3_tool delete bkt dir/small 2>"$tmp/err" || fail "delete: $(cat "$tmp/err")"
s3_tool delete bkt dir/small 2>"$tmp/err" || fail "deleting an absent object: $(cat "$tmp/err")"
s3_tool head bkt dir/small 2>"$tmp/err" && fail "head after delete succeeded"
grep -q "s3://bkt/dir/small: no such object (404)" "$tmp/err" || fail "after delete: $(cat "$tmp/err")"
grep -q "^retries 0$" "$tmp/err" || fail "retries against a healthy server: $(cat "$tmp/err")"
echo "roundtrip: put, put from memory, head, get, 5 ranges, 3-part multipart, abort, delete"
