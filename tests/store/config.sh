#!/usr/bin/env bash
# config.sh — where the S3 client's settings come from (s3_config_load):
# the region and endpoint variables and their defaults, path-style and
# virtual-host addressing (both against moto: virtual-host through
# BUCKET.localhost, which curl resolves to loopback itself), and keys from
# a credentials file by AWS_PROFILE and AWS_SHARED_CREDENTIALS_FILE (moto
# checking the signatures made with them); refusals name the variable or
# the file and profile.
. "$(dirname "$0")/../lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
need_exe "$s3_tool_exe"
s3_start --auth
s3_py mb bkt || fail "cannot create the bucket"
key=$AWS_ACCESS_KEY_ID secret=$AWS_SECRET_ACCESS_KEY

# config_is WANT [VAR=VALUE...]: s3_tool config's line under those variables.
config_is() {
	local want=$1 got
	shift
	got=$(env "$@" "$s3_tool_exe" config 2>&1)
	[ "$got" = "$want" ] || fail "config with $*: got '$got', wanted '$want'"
}
config_is "endpoint=https://s3.us-east-1.amazonaws.com region=us-east-1 path_style=0 access_key=$key session_token=no tries=6" \
	-u AWS_ENDPOINT_URL -u AWS_REGION
config_is "endpoint=https://s3.eu-west-3.amazonaws.com region=eu-west-3 path_style=0 access_key=$key session_token=no tries=6" \
	-u AWS_ENDPOINT_URL -u AWS_REGION AWS_DEFAULT_REGION=eu-west-3
config_is "endpoint=https://s3.ap-south-1.amazonaws.com region=ap-south-1 path_style=1 access_key=$key session_token=yes tries=6" \
	-u AWS_ENDPOINT_URL AWS_REGION=ap-south-1 AWS_DEFAULT_REGION=eu-west-3 FEEDER_S3_ADDRESSING=path AWS_SESSION_TOKEN=tok
config_is "endpoint=http://minio.example:9000 region=us-east-1 path_style=1 access_key=$key session_token=no tries=6" \
	AWS_ENDPOINT_URL=http://minio.example:9000/
config_is "endpoint=http://minio.example:9000 region=us-east-1 path_style=0 access_key=$key session_token=no tries=6" \
	AWS_ENDPOINT_URL=http://minio.example:9000 FEEDER_S3_ADDRESSING=virtual
config_is "s3_tool: AWS_ENDPOINT_URL 'ftp://x' is not http(s)://host[:port]" AWS_ENDPOINT_URL=ftp://x
config_is "s3_tool: AWS_ENDPOINT_URL 'http://x/path' is not http(s)://host[:port]" AWS_ENDPOINT_URL=http://x/path
config_is "s3_tool: FEEDER_S3_ADDRESSING 'both' is not path or virtual" FEEDER_S3_ADDRESSING=both
config_is "s3_tool: AWS_REGION holds a space or control character" "AWS_REGION=Mars 1"
config_is "s3_tool: AWS_REGION 'MARS' is not a region name (a-z, 0-9, '-')" AWS_REGION=MARS

# URLs.
[ "$("$s3_tool_exe" url s3://my.bucket-1//a/b/)" = "bucket=my.bucket-1 prefix=a/b" ] || fail "url parse"
[ "$("$s3_tool_exe" url s3://bkt)" = "bucket=bkt prefix=" ] || fail "url without prefix"
for bad in s3:/bkt/x s3://-bkt/x s3://bkt-/x s3://BKT/x s3://b_k/x "s3://$(printf 'a%.0s' {1..64})/x" s3:///x; do
	"$s3_tool_exe" url "$bad" >/dev/null 2>&1 && fail "url $bad accepted"
done

# Path-style, then virtual-host, against moto: its log shows which.
head -c 5000 /dev/urandom >"$tmp/obj"
FEEDER_S3_ADDRESSING=path s3_tool put bkt path-obj "$tmp/obj" 2>"$tmp/err" || fail "path-style: $(cat "$tmp/err")"
grep -q '"PUT /bkt/path-obj HTTP' "$s3_log" || fail "path-style request not seen: $(tail -n 3 "$s3_log")"
AWS_ENDPOINT_URL=http://localhost:$s3_port FEEDER_S3_ADDRESSING=virtual \
	s3_tool put bkt virtual-obj "$tmp/obj" 2>"$tmp/err" || fail "virtual-host: $(cat "$tmp/err")"
grep -q '"PUT /virtual-obj HTTP' "$s3_log" || fail "virtual-host request not seen: $(tail -n 3 "$s3_log")"
AWS_ENDPOINT_URL=http://localhost:$s3_port FEEDER_S3_ADDRESSING=virtual \
	s3_tool get bkt path-obj "$tmp/got" 2>"$tmp/err" || fail "virtual-host get: $(cat "$tmp/err")"
cmp "$tmp/obj" "$tmp/got" || fail "virtual-host get: bytes differ"
s3_py ls bkt | grep -q "^virtual-obj 5000$" || fail "boto3 does not see the virtual-host object"

# The credentials file: the profile's keys, the environment's absent.
cat >"$tmp/credentials" <<EOC
# a comment
[default]
aws_access_key_id = AKIAWRONGDEFAULT0000
aws_secret_access_key = wrong-default

[feeder]
aws_access_key_id=$key
  aws_secret_access_key   =   $secret
; another comment
[only-id]
aws_access_key_id = AKIAONLYID0000000000
EOC
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	export AWS_SHARED_CREDENTIALS_FILE=$tmp/credentials
	AWS_PROFILE=feeder s3_tool put bkt from-file "$tmp/obj" 2>"$tmp/err" || fail "profile feeder: $(cat "$tmp/err")"
	AWS_PROFILE=feeder s3_tool get bkt from-file "$tmp/got" 2>/dev/null && cmp "$tmp/obj" "$tmp/got" || fail "profile feeder get"
	s3_tool get bkt from-file "$tmp/got2" 2>"$tmp/err" && fail "the default profile's wrong keys were accepted"
	grep -q "access denied (403 InvalidAccessKeyId) for access key AKIAWRONGDEFAULT0000" "$tmp/err" || fail "default profile: $(cat "$tmp/err")"
	AWS_PROFILE=nope s3_tool head bkt x 2>"$tmp/err" && fail "a missing profile was accepted"
	grep -q "^s3_tool: no S3 credentials: .* the profile 'nope' of $tmp/credentials is not there (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)$" "$tmp/err" \
		|| fail "missing profile: $(cat "$tmp/err")"
	AWS_PROFILE=only-id s3_tool head bkt x 2>"$tmp/err" && fail "a profile without a secret was accepted"
	grep -q "the profile 'only-id' of $tmp/credentials has no aws_access_key_id and aws_secret_access_key" "$tmp/err" \
		|| fail "profile without a secret: $(cat "$tmp/err")"
	# ~/.aws/credentials when the variable is not set.
	mkdir -p "$tmp/home/.aws" && cp "$tmp/credentials" "$tmp/home/.aws/credentials"
	HOME=$tmp/home AWS_PROFILE=feeder env -u AWS_SHARED_CREDENTIALS_FILE "$s3_tool_exe" head bkt from-file >"$tmp/out" 2>"$tmp/err" \
		|| fail "~/.aws/credentials: $(cat "$tmp/err")"
	[ "$(cat "$tmp/out")" = 5000 ] || fail "~/.aws/credentials head: $(cat "$tmp/out")"
) || exit 1
grep -qF -- "$secret" "$tmp/err" "$tmp/out" && fail "the secret was printed"
echo "config: defaults, addressing (path and virtual-host on moto), credentials file profiles"
