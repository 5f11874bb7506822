#!/bin/bash
# test_check_config.sh — `feederd --check-config` end to end: exit 0 and the
# effective configuration for a good file (the shipped example included),
# exit 2 with exactly one line naming the problem for an unknown key, an
# unknown flag, a bad value or a missing datasets directory; precedence of
# flag > FEEDER_SOCKET > file as feederd prints it; a warning when
# metrics_listen makes /metrics visible from other machines; the remote
# datasets' keys printed, and a bad `remote` list refused naming its entry.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_exe "$feederd"
mkdir "$tmp/ds"
unset FEEDER_SOCKET

# expect_error EXIT NEEDLE ARGS...: exit status EXIT, one stderr line with NEEDLE.
expect_error() {
	local want=$1 needle=$2; shift 2
	expect_rc "$want" "$feederd" "$@"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "feederd $*: not one line: $(cat "$tmp/err")"
	grep -qF -- "$needle" "$tmp/err" || fail "feederd $*: '$needle' not in: $(cat "$tmp/err")"
	echo "exit $want: $(cat "$tmp/err")"
}

printf '[feederd]\nworkers = 3\ndatasets = %s\nsocket = %s/file.sock\n' "$tmp/ds" "$tmp" > "$tmp/good.conf"
expect_rc 0 "$feederd" --config "$tmp/good.conf" --check-config
grep -qx 'workers = 3' "$tmp/out" || fail "printed config lacks workers = 3: $(cat "$tmp/out")"
grep -qx "socket = $tmp/file.sock" "$tmp/out" || fail "file socket not used"

FEEDER_SOCKET=$tmp/env.sock expect_rc 0 "$feederd" --config "$tmp/good.conf" --check-config
grep -qx "socket = $tmp/env.sock" "$tmp/out" || fail "FEEDER_SOCKET did not override the file"
FEEDER_SOCKET=$tmp/env.sock expect_rc 0 "$feederd" --config "$tmp/good.conf" \
	--socket "$tmp/flag.sock" --check-config
grep -qx "socket = $tmp/flag.sock" "$tmp/out" || fail "--socket did not override FEEDER_SOCKET"

# The shipped example is valid and says the defaults.
expect_rc 0 "$feederd" --config "$src/dist/feederd.conf" --datasets "$tmp/ds" --check-config
grep -qx 'memory_limit = 4294967296' "$tmp/out" || fail "example: $(cat "$tmp/out")"
grep -qx 'socket = /run/feeder/feederd.sock' "$tmp/out" || fail "example socket"
# Every key it mentions, uncommented, is a valid setting whose printed value
# is the built-in default (the example cannot drift from the code), and it
# mentions every key --check-config prints.
sed 's/^#\([a-z_]* =\)/\1/' "$src/dist/feederd.conf" > "$tmp/uncommented.conf"
"$feederd" --config /dev/null --datasets "$tmp/ds" --check-config | grep -v '^[#[]' | sort > "$tmp/defaults"
"$feederd" --config "$tmp/uncommented.conf" --datasets "$tmp/ds" --check-config 2>"$tmp/err" \
	| grep -v '^[#[]' | grep -v '^workers = ' | sort > "$tmp/example" \
	|| fail "dist/feederd.conf uncommented: $(cat "$tmp/err")"
grep -v '^workers = ' "$tmp/defaults" | diff - "$tmp/example" >&2 \
	|| fail "dist/feederd.conf uncommented differs from the defaults (diff above)"
for key in $(cut -d' ' -f1 "$tmp/defaults"); do
	grep -q "^#$key =" "$src/dist/feederd.conf" || fail "dist/feederd.conf does not mention $key"
done

printf 'workers = 2\nwrokers = 3\n' > "$tmp/typo.conf"
expect_error 2 "config $tmp/typo.conf:2: unknown key 'wrokers'" --config "$tmp/typo.conf" --check-config
expect_error 2 "unknown flag '--bogus'" --config "$tmp/good.conf" --bogus --check-config
expect_error 2 "--workers: 'lots' is not a number" --config "$tmp/good.conf" --workers lots
expect_error 2 "--memory-limit: '12X' is not a size" --config "$tmp/good.conf" --memory-limit 12X --check-config
expect_error 2 "$tmp/nope" --config "$tmp/good.conf" --datasets "$tmp/nope" --check-config
expect_error 2 "$tmp/missing.conf" --config "$tmp/missing.conf" --check-config
# /metrics on every interface, or on an address that is not loopback, is
# visible from other machines: a warning on stderr (the check still passes).
for spec in '*:9477' '0.0.0.0:9477' '[::]:9477' '192.0.2.7:9477'; do
	expect_rc 0 "$feederd" --config "$tmp/good.conf" --metrics-listen "$spec" --check-config
	grep -q "^feederd: warning: metrics_listen = .* visible from other machines" "$tmp/err" \
		|| fail "no warning for --metrics-listen $spec: '$(cat "$tmp/err")'"
done
echo "warned: $(cat "$tmp/err")"
for spec in 127.0.0.1:9477 '[::1]:9477' localhost:9477 "$tmp/metrics.sock"; do
	expect_rc 0 "$feederd" --config "$tmp/good.conf" --metrics-listen "$spec" --check-config
	[ -s "$tmp/err" ] && fail "--metrics-listen $spec: a warning: $(cat "$tmp/err")"
done
# Remote datasets: the keys as set, printed back (sizes in bytes); a bad
# `remote` list is refused before anything starts, naming the entry.
printf 'remote = a=s3://bkt/p , c=s3://bkt2\ncache_dir = %s/cache\ncache_limit = 2G\nfetchers = 8\nfetch_tries = 3\nshuffle_block = 16\nremote_check = 5\n' \
	"$tmp" >> "$tmp/good.conf"
expect_rc 0 "$feederd" --config "$tmp/good.conf" --check-config
for want in 'remote = a=s3://bkt/p , c=s3://bkt2' "cache_dir = $tmp/cache" \
	    'cache_limit = 2147483648' 'fetchers = 8' 'fetch_tries = 3' 'shuffle_block = 16' \
	    'remote_check = 5'; do
	grep -qxF "$want" "$tmp/out" || fail "printed config lacks '$want': $(cat "$tmp/out")"
done
expect_error 2 "remote: dataset 'a' is named twice" --config "$tmp/good.conf" \
	--remote 'a=s3://bkt, a=s3://bkt2' --check-config
# The bucket's name is checked where the configuration is, not when the
# daemon first asks the store.
expect_error 2 "remote: dataset 'a': 's3://My_Bucket/p': the bucket name 'My_Bucket' is not 3 to 63" \
	--config "$tmp/good.conf" --remote 'a = s3://My_Bucket/p' --check-config
expect_error 2 "remote: 'x' is not NAME=s3://BUCKET/PREFIX" --config "$tmp/good.conf" \
	--remote x --check-config
expect_error 2 "--shuffle-block: '0' is not a number from 1 to 4096" --config "$tmp/good.conf" \
	--shuffle-block 0 --check-config
expect_error 2 "--cache-limit: '4K' is not a size" --config "$tmp/good.conf" --cache-limit 4K \
	--check-config
"$feederd" --help | grep -q -- '--memory-limit' || fail "--help lacks --memory-limit"
"$feederd" --version | grep -q '^feederd ' || fail "--version"
echo "ok: --check-config"
