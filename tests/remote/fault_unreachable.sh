#!/bin/bash
# fault_unreachable.sh — feederd started with a remote dataset whose S3
# endpoint is a loopback port where nothing listens: the daemon starts all
# the same and serves its local dataset (an epoch, checked), logs one line
# naming the dataset's URL (besides the refusal below; not one per check: --remote-check 1 for a few
# seconds), and a stream opened on the remote dataset is refused with an
# error naming the URL; it exits 0 on SIGTERM.
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
url=s3://bkt/ds
t0=$(date +%s%N)
start_daemon --remote "remote=$url" --cache-dir "$tmp/cache" --fetch-tries 3 --remote-check 1 \
	|| fail "feederd did not start with an unreachable remote dataset: $daemon_why"
start_ms=$((($(date +%s%N) - t0) / 1000000))
wait_served local 16
fault_client "$tmp/ref.log" local
[[ $(client_end "$tmp/ref.log") == "ok 16 0" ]] || fail "the local epoch: $(client_end "$tmp/ref.log")"
sort -n -k2 "$tmp/ref.log" | awk '$1 == "S" { print $2 }' | tr '\n' ' ' >"$tmp/indices"
[ "$(cat "$tmp/indices")" = "$(seq -s ' ' 0 15) " ] || fail "the local epoch's indices: $(cat "$tmp/indices")"
fault_client "$tmp/remote.log" remote
end=$(client_end "$tmp/remote.log")
[[ $end == refused* ]] || fail "a stream on the unreachable remote dataset: $end"
[[ $end == *"$url"* ]] || fail "the refusal does not name $url: $end"
sleep 3 # three more checks of the manifest, which must not log again
daemon_alive
# (the refusal of the stream is logged too, as every refusal is)
grep "$url" "$daemon_log" | grep -v "OPEN_STREAM of 'remote' refused" >"$tmp/url-lines"
lines=$(wc -l <"$tmp/url-lines")
[ "$lines" = 1 ] || fail "feederd logged $lines lines naming $url, expected 1: $(cat "$tmp/url-lines")"
logged_line=$(cat "$tmp/url-lines")
stop_daemon || fail "$daemon_why"
echo "ok: unreachable: feederd answered after $start_ms ms, served local (16 samples right), logged" \
	"'${logged_line#<?>}'; the remote stream was refused: ${end#refused }; feederd exited 0"
