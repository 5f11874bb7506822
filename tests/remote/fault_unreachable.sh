#!/bin/bash
# fault_unreachable.sh — feederd started with two remote datasets whose S3
# endpoint is a loopback port where nothing listens (their manifests read
# at the start side by side): the daemon starts all the same and serves
# its local dataset (an epoch, checked), logs one line naming each
# dataset's URL (besides the refusals below; not one per check:
# --remote-check 1 for a few seconds), and a stream opened on either remote
# dataset is refused with an error naming its URL; it exits 0 on SIGTERM.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
make_images local 16 4 7
dead=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ENDPOINT_URL=http://127.0.0.1:$dead AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=AKIAFEEDERTEST000000 AWS_SECRET_ACCESS_KEY=feeder-test-secret
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=$tmp/no-credentials
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_REGION
url=s3://bkt/ds url2=s3://bkt/other
t0=$(date +%s%N)
start_daemon --remote "remote=$url, other = $url2" --cache-dir "$tmp/cache" --fetch-tries 3 --remote-check 1 \
	|| fail "feederd did not start with an unreachable remote dataset: $daemon_why"
start_ms=$((($(date +%s%N) - t0) / 1000000))
wait_served local 16
fault_client "$tmp/ref.log" local
[[ $(client_end "$tmp/ref.log") == "ok 16 0" ]] || fail "the local epoch: $(client_end "$tmp/ref.log")"
sort -n -k2 "$tmp/ref.log" | awk '$1 == "S" { print $2 }' | tr '\n' ' ' >"$tmp/indices"
[ "$(cat "$tmp/indices")" = "$(seq -s ' ' 0 15) " ] || fail "the local epoch's indices: $(cat "$tmp/indices")"
for pair in "remote $url" "other $url2"; do
	set -- $pair
	fault_client "$tmp/$1.log" "$1"
	end=$(client_end "$tmp/$1.log")
	[[ $end == refused* ]] || fail "a stream on the unreachable remote dataset $1: $end"
	[[ $end == *"$2/"* ]] || fail "the refusal does not name $2: $end"
done
sleep 3 # three more checks of the manifests, which must not log again
daemon_alive
for pair in "remote $url" "other $url2"; do
	set -- $pair
	# (the refusal of the stream is logged too, as every refusal is)
	grep "$2/" "$daemon_log" | grep -v "OPEN_STREAM of '$1' refused" >"$tmp/url-lines"
	lines=$(wc -l <"$tmp/url-lines")
	[ "$lines" = 1 ] || fail "feederd logged $lines lines naming $2, expected 1: $(cat "$tmp/url-lines")"
done
logged_line=$(cat "$tmp/url-lines")
end=$(client_end "$tmp/remote.log")
stop_daemon || fail "$daemon_why"
echo "ok: unreachable: feederd answered after $start_ms ms, served local (16 samples right), logged" \
	"'${logged_line#<?>}'; the remote stream was refused: ${end#refused }; feederd exited 0"
