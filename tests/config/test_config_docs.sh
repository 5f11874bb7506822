#!/bin/bash
# test_config_docs.sh — feederd's key table (daemon/config.c's keys[], read
# back from `feederd --help`, which prints one line per key with its flag,
# its value's name and its default) and the documents that describe it name
# the same keys: feederd.conf(5) describes every key, at its default, and no
# key the table lacks; feederd(8) lists every key's flag with the same value
# name and no flag that feederd does not take; dist/feederd.conf shows every
# key at its default and no other key.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
need_exe "$feederd"
# Every mismatch is reported before the test fails.
fails=0
wrong() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The table, "key arg default" a line ("-" for an empty default), from
# "  --memory-limit BYTES   what it is (default 4G)".
"$feederd" --help >"$tmp/help" || fail "feederd --help"
sed -n 's/^  --\([a-z-]*\) \([^ ]*\) .*(default \([^)]*\))$/\1 \2 \3/p' "$tmp/help" \
	| grep -v '^config ' | sed 's/ empty$/ -/' \
	| awk '{ gsub("-", "_", $1); print }' >"$tmp/table"
# --check-config walks the same table: the two must list the same keys, so
# a --help this script misreads cannot pass for an empty table.
"$feederd" --config /dev/null --datasets "$tmp" --check-config 2>&1 \
	| sed -n 's/^\([a-z_]*\) =.*/\1/p' | sort >"$tmp/printed"
cut -d' ' -f1 "$tmp/table" | sort | diff - "$tmp/printed" >&2 \
	|| fail "the keys of --help (<) and of --check-config (>) differ"
[ -s "$tmp/table" ] || fail "no keys in feederd --help"
# table KEY COLUMN: the key's value name (2) or default (3); empty if no key.
table() { awk -v k="$1" -v c="$2" '$1 == k { print $c }' "$tmp/table"; }

# A documented default matches the table's: the same text, or the text
# followed by ':' and what it means ("auto: online CPUs").
default_ok() { # DOCUMENTED TABLE
	local want=$2
	[ "$want" = - ] && want=empty
	[ "$1" = "$want" ] || [ "${1#"$want":}" != "$1" ]
}

# feederd.conf(5): each ".TP" of KEYS is followed by
#   .BR key [", " key] " (default...)"
sed 's/\\-/-/g' "$src/man/feederd.conf.5" \
	| awk '/^\.SH KEYS/ { on = 1; next } /^\.SH/ { on = 0 }
	       on && tp { print } { tp = on && /^\.TP/ }' >"$tmp/conf5"
: >"$tmp/conf5.keys"
while IFS= read -r line; do
	doc=$(grep -o '"[^"]*"' <<<"$line" | tail -1 | sed 's/^" *(//; s/)"$//')
	for key in $(sed 's/^\.BR* //; s/"[^"]*"//g' <<<"$line"); do
		echo "$key" >>"$tmp/conf5.keys"
		def=$(table "$key" 3)
		if [ -z "$def" ]; then
			wrong "feederd.conf.5 describes '$key', which is not a key of feederd"
		elif ! default_ok "$doc" "$def"; then
			wrong "feederd.conf.5 gives $key the default '$doc'; feederd's is '$def'"
		fi
	done
done <"$tmp/conf5"

# feederd(8): ".BI \-\-flag \" ARG\"" (or ".B \-\-flag") in OPTIONS.
sed 's/\\-/-/g' "$src/man/feederd.8" \
	| awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 } on' \
	| sed -n 's/^\.BI* --\([a-z-]*\)\( "* *\([^"]*\)"*\)*$/\1 \3/p' >"$tmp/flags8"
while read -r flag arg; do
	case $flag in config|check-config|help|version) continue ;; esac
	key=${flag//-/_}
	want=$(table "$key" 2)
	if [ -z "$want" ]; then
		wrong "feederd.8 lists --$flag, which feederd does not take"
	elif [ "$arg" != "$want" ]; then
		wrong "feederd.8 calls the value of --$flag '$arg'; feederd --help calls it '$want'"
	fi
done <"$tmp/flags8"

# dist/feederd.conf: "#key = value" (or uncommented) lines.
sed -n 's/^#\{0,1\}\([a-z_]*\) *= *\(.*\)$/\1 \2/p' "$src/dist/feederd.conf" >"$tmp/example"
while read -r key val; do
	def=$(table "$key" 3)
	if [ -z "$def" ]; then
		wrong "dist/feederd.conf sets '$key', which is not a key of feederd"
	elif [ "${val:--}" != "$def" ]; then
		wrong "dist/feederd.conf shows $key = '$val'; the default is '$def'"
	fi
done <"$tmp/example"

while read -r key arg def; do
	grep -qx "$key" "$tmp/conf5.keys" || wrong "feederd.conf.5 does not describe $key"
	grep -q "^${key//_/-} " "$tmp/flags8" || wrong "feederd.8 does not list --${key//_/-}"
	grep -q "^$key " "$tmp/example" || wrong "dist/feederd.conf does not show $key"
done <"$tmp/table"

[ $fails = 0 ] || exit 1
echo "ok: $(wc -l <"$tmp/table") keys, each in feederd.conf.5, feederd.8 and" \
	"dist/feederd.conf at its default"
