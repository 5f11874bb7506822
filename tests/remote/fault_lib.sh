# fault_lib.sh — what the remote fault tests (fault_*.sh) share beyond
# fixture.sh: the fault-injecting proxy in front of moto (s3_proxy.py), a
# Python client that prints every sample it was given (fault_client.py),
# and the check of what it printed against the same epoch read from the
# local copy of the dataset. Sourced after lib.sh, s3_server.sh, fixture.sh.
#
#   need_feeder_python  skip unless a Python imports the feeder package
#   fault_client LOG DATASET [ARGS...]    the client, in the foreground
#   fault_spawn LOG DATASET [ARGS...]     the same in the background
#   client_end LOG      its END line ("ok N R", "error CLASS CODE MSG", ...)
#   reference           $tmp/ref.log: the epoch of "local" (start_remote first)
#   check_epoch LOG [--all] [--skip FIRST:COUNT] [--dups N]
#                       every sample of LOG is $ref_log's (index, label,
#                       pixels); --all: every index of the epoch (but the
#                       skipped ones) delivered;
#                       --skip: none of those indices; --dups: at most N
#                       deliveries of an index delivered before (the
#                       replacements of skipped ones; default none)
#   proxy_start         s3_proxy.py in front of moto: proxy_port, proxy_log
#   proxy_rules JSON    the proxy's rules from now on (s3_proxy.py's doc)
#   start_proxied [FLAGS...]   start_remote with feederd's S3 endpoint the proxy
#   cache_stat KEY      feederctl status --json's cache.KEY
#   shard_key N         the object name of shard N ("shard-0000N.mdb")
#   shard_range N       "FIRST:COUNT" of shard N (the manifest's)
fault_py=
ref_log=$tmp/ref.log

need_feeder_python() {
	export PYTHONPATH=$build/client/python${PYTHONPATH:+:$PYTHONPATH}
	fault_py=$(
		. "$src/tests/python/sanitizer_env.sh"
		sanitizer_env "$build/client/libfeeder.so.0"
		find_python feeder numpy
	) || skip "$fault_py"
}

# The interpreter is not instrumented: a sanitizer build's libfeeder needs
# its runtimes preloaded (only into the client, not the daemon or moto).
fault_client() {
	local log=$1
	shift
	(
		. "$src/tests/python/sanitizer_env.sh"
		sanitizer_env "$build/client/libfeeder.so.0"
		exec "$fault_py" "$src/tests/remote/fault_client.py" "$sock" "$@"
	) >"$log" 2>&1
}
fault_spawn() {
	fault_client "$@" &
	spawned=$!
	bg_pids+=("$spawned")
}

client_end() {
	local line
	line=$(grep '^END ' "$1" | tail -n 1)
	[ -n "$line" ] || fail "the client printed no END line: $(tail -n 5 "$1")"
	echo "${line#END }"
}

reference() {
	fault_client "$tmp/ref.log" local
	[[ $(client_end "$tmp/ref.log") == ok* ]] || fail "the local epoch: $(client_end "$tmp/ref.log")"
}

check_epoch() {
	"$py" - "$ref_log" "$@" 2>"$tmp/check.err" <<-'EOF' || fail "$(cat "$tmp/check.err")"
	import sys
	ref_path, log = sys.argv[1], sys.argv[2]
	want_all, skip, dups = False, None, 0
	args = sys.argv[3:]
	while args:
	    a = args.pop(0)
	    if a == "--all":
	        want_all = True
	    elif a == "--skip":
	        f, c = args.pop(0).split(":")
	        skip = range(int(f), int(f) + int(c))
	    elif a == "--dups":
	        dups = int(args.pop(0))
	def samples(path):
	    return [tuple(l.split()[1:4]) for l in open(path) if l.startswith("S ")]
	ref = {int(i): (lab, crc) for i, lab, crc in samples(ref_path)}
	seen, why = {}, []
	for i, lab, crc in samples(log):
	    i = int(i)
	    if i not in ref:
	        why.append("index %d is not in the epoch" % i)
	    elif ref[i] != (lab, crc):
	        why.append("index %d: label %s crc %s, the local copy's %s crc %s"
	                   % (i, lab, crc, ref[i][0], ref[i][1]))
	    if skip is not None and i in skip:
	        why.append("index %d of the skipped range was delivered" % i)
	    seen[i] = seen.get(i, 0) + 1
	extra = sum(c - 1 for c in seen.values())
	if extra > dups:
	    why.append("%d deliveries of indices delivered before (allowed: %d): %s" % (
	        extra, dups, sorted((i, c) for i, c in seen.items() if c > 1)[:8]))
	if want_all:
	    missing = set(ref) - set(seen) - set(skip or ())
	    if missing:
	        why.append("%d indices never delivered (%s)" % (len(missing), sorted(missing)[:8]))
	if why:
	    sys.stderr.write("%s: %s\n" % (log, "; ".join(why[:5])))
	    sys.exit(1)
	EOF
}

proxy_start() {
	proxy_log=$tmp/proxy.log
	proxy_rules_file=$tmp/proxy-rules.json
	: >"$proxy_log"
	spawn "$tmp/proxy.out" /usr/bin/python3 "$src/tests/remote/s3_proxy.py" "$tmp/proxy.port" \
		"$s3_port" "$proxy_rules_file" "$proxy_log"
	wait_until 10 test -s "$tmp/proxy.port" || fail "s3_proxy.py did not start: $(cat "$tmp/proxy.out")"
	proxy_port=$(cat "$tmp/proxy.port")
}

proxy_rules() {
	printf '%s\n' "$1" >"$proxy_rules_file.tmp" && mv "$proxy_rules_file.tmp" "$proxy_rules_file"
}

start_proxied() {
	local endpoint=$AWS_ENDPOINT_URL
	export AWS_ENDPOINT_URL=http://127.0.0.1:$proxy_port
	start_remote "$@"
	AWS_ENDPOINT_URL=$endpoint
}

cache_stat() {
	daemon_alive
	"$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["cache"][sys.argv[2]])' \
		"$tmp/status.json" "$1"
}

shard_key() { awk -v n="$1" '$1 == "shard" && k++ == n { print $2 }' "$tmp/shards/feeder.manifest"; }
shard_range() { awk -v n="$1" '$1 == "shard" && k++ == n { print $3 ":" $4 }' "$tmp/shards/feeder.manifest"; }
