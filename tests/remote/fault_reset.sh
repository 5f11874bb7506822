#!/bin/bash
# fault_reset.sh — the connection reset (RST) in the middle of a shard's
# body, once (s3_proxy.py in front of moto): the client resumes where it
# stopped, with a Range GET of that object starting at the byte after the
# last one it got (the proxy's log), and the epoch of the remote dataset is
# whole and right (every index once, labels and pixels those of the local
# copy).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
. "$src/tests/lib/s3_server.sh"
. "$here/fixture.sh"
. "$here/fault_lib.sh"
need_feeder_python
remote_dataset 48 20K
proxy_start
key=$(shard_key 1)
after=10000
proxy_rules '[{"method": "GET", "path": "/bkt/ds/'"${key//./\\\\.}"'", "action": "reset", "after": '$after', "times": 1}]'
start_proxied --fetch-tries 4
reference
fault_client "$tmp/epoch.log" remote
end=$(client_end "$tmp/epoch.log")
[[ $end == "ok 48 0" ]] || fail "the remote epoch through a reset ended: $end"
check_epoch "$tmp/epoch.log" --all
grep $'^GET\t/bkt/ds/'"$key" "$proxy_log" >"$tmp/gets" || fail "no GET of $key: $(cat "$proxy_log")"
[ "$(wc -l <"$tmp/gets")" = 2 ] || fail "expected 2 GETs of $key (the reset one, the resumed one): $(cat "$tmp/gets")"
[ "$(sed -n 1p "$tmp/gets" | cut -f4)" = "reset:$after" ] || fail "the first GET was not reset: $(cat "$tmp/gets")"
size=$(awk -v k="$key" '$1 == "shard" && $2 == k { print $5 }' "$tmp/shards/feeder.manifest")
resumed=$(sed -n 2p "$tmp/gets")
[ "$(echo "$resumed" | cut -f3)" = "bytes=$after-$((size - 1))" ] \
	|| fail "the second GET of $key ($size bytes, reset after $after) is not a Range GET from $after: $resumed"
[ "$(echo "$resumed" | cut -f4)" = pass ] || fail "the resumed GET: $resumed"
stop_daemon || fail "$daemon_why"
[ -z "$(find "$tmp/cache" -name '.tmp-*')" ] || fail "temporary files left in the cache: $(ls -a "$tmp/cache")"
echo "ok: reset: $key reset after $after bytes, resumed with $(echo "$resumed" | cut -f3); the epoch" \
	"whole and right; feederd exited 0"
