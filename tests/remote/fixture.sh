# fixture.sh — what the remote-dataset tests share, sourced after
# tests/lib/lib.sh and tests/lib/s3_server.sh: a photo dataset packed both
# ways (one data.mdb served locally as "local", and shards pushed to the
# bucket), and feederd serving the pushed one as "remote".
#
#   remote_dataset N SHARD_SIZE [PACK OPTIONS...]
#                     N photos in 4 classes packed into $datasets/local and,
#                     with --shard-size SHARD_SIZE --order walk (the same
#                     sample order), into $tmp/shards; moto started, the
#                     shards pushed to s3://bkt/ds. Sets remote_shards (how
#                     many) and shard_max (the largest shard's bytes).
#   start_remote [FLAGS...]
#                     start_daemon with remote = remote=s3://bkt/ds, its
#                     cache in $tmp/cache (FLAGS win), and waits until
#                     "remote" is served.
#   remote_client ARGS...
#                     tests/remote/remote_client.py, feeder.Loader's client.
#   cache_fetches     the shard cache's fetches so far (feederctl status).
remote_dataset() {
	local n=$1 size=$2
	shift 2
	need_exe "$packer"
	make_images local "$n" 4 7 --resize-shorter 64 "$@"
	"$packer" pack images --threads "$threads" --resize-shorter 64 "$@" --shard-size "$size" \
		--order walk "$tmp/src-local" "$tmp/shards" >/dev/null 2>"$tmp/pack-shards.log" \
		|| fail "packer pack --shard-size: $(tail -n 2 "$tmp/pack-shards.log")"
	remote_shards=$(awk '$1 == "shards" { print $2 }' "$tmp/shards/feeder.manifest")
	shard_max=$(awk '$1 == "shard" && $5 > m { m = $5 } END { print m }' "$tmp/shards/feeder.manifest")
	[ "${s3_port:-}" ] || s3_start
	s3_py mb bkt >/dev/null || fail "cannot create the bucket"
	"$packer" push "$tmp/shards" s3://bkt/ds >/dev/null 2>"$tmp/push.log" \
		|| fail "packer push: $(tail -n 2 "$tmp/push.log")"
}

start_remote() {
	start_daemon --remote "remote=s3://bkt/ds" --cache-dir "$tmp/cache" "$@" \
		|| fail "$daemon_why"
	wait_served remote "$("$packer" inspect "$datasets/local" | awk '$1 == "samples:" { print $2 }')"
}

# remote_client ARGS...: tests/remote/remote_client.py (feeder.Loader) with
# the built package, under a Python with NumPy and cffi (else skip); in a
# sanitizer build the runtimes are preloaded (tests/python/sanitizer_env.sh).
remote_client() {
	[ -d "$build/client/python/feeder" ] || skip "the Python package is not built (-Dpython)"
	need_python numpy cffi
	. "$src/tests/python/sanitizer_env.sh"
	(
		export PYTHONPATH=$build/client/python
		sanitizer_env "$build/client/libfeeder.so.0"
		"$py" "$src/tests/remote/remote_client.py" "$@"
	)
}

# cache_fetches: the shard cache's fetches so far (feederctl status --json).
cache_fetches() {
	"$feederctl" --socket "$sock" status --json >"$tmp/cache.json" || fail "feederctl status"
	"$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["cache"]["fetches"])' \
		"$tmp/cache.json"
}
