#!/usr/bin/env bash
# test_man.sh — the man pages: each renders with `man -l`
# without a single groff warning, and they cannot drift from the code:
# every long option a tool's --help prints is in its page, and every key
# `feederd --check-config` prints is in feederd.conf(5).
set -u
build=${FEEDER_BUILD:?FEEDER_BUILD must name the build directory}
src=${FEEDER_SOURCE:?FEEDER_SOURCE must name the source directory}
command -v man >/dev/null || { echo "SKIP: man is not installed (man-db; tools/install-deps)"; exit 77; }
command -v groff >/dev/null || { echo "SKIP: groff is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

pages=(feeder.7 feederd.8 feederd.conf.5 packer.1 feederctl.1 feeder-bench.1 xvec.1 libfeeder.3)
for p in "${pages[@]}"; do
	f=$src/man/$p
	[ -f "$f" ] || { fail "$p is missing"; continue; }
	if ! LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" >"$tmp/out" 2>"$tmp/err"; then
		fail "$p does not render: $(head -3 "$tmp/err")"
	elif [ -s "$tmp/err" ]; then
		fail "$p renders with warnings: $(head -3 "$tmp/err")"
	elif [ "$(wc -l <"$tmp/out")" -lt 20 ]; then
		fail "$p renders to almost nothing"
	fi
done

# Long options in --help that the page must mention (roff escapes removed).
check_options() { # PAGE HELP-COMMAND...
	local page=$1; shift
	"$@" >"$tmp/help" 2>&1
	sed 's/\\//g' "$src/man/$page" >"$tmp/page"
	for opt in $(grep -o -- '--[a-z][a-z0-9-]*' "$tmp/help" | sort -u); do
		grep -q -- "$opt" "$tmp/page" || fail "$page does not mention $opt (from $*)"
	done
}
check_options feederd.8 "$build/daemon/feederd" --help
check_options packer.1 "$build/packer/packer" --help
check_options packer.1 "$build/packer/packer" pack audio --help
check_options feederctl.1 "$build/tools/feederctl" --help
check_options feeder-bench.1 "$build/tools/feeder-bench" --help
if [ -x "$build/xvec/xvec" ]; then
	check_options xvec.1 "$build/xvec/xvec" --help
fi

# Every configuration key.
"$build/daemon/feederd" --config /dev/null --datasets "$tmp" --check-config >"$tmp/keys" 2>&1 \
	|| fail "feederd --check-config: $(cat "$tmp/keys")"
sed 's/\\//g' "$src/man/feederd.conf.5" >"$tmp/conf"
for key in $(grep -o '^[a-z_]* =' "$tmp/keys" | cut -d' ' -f1); do
	grep -q "$key" "$tmp/conf" || fail "feederd.conf.5 does not describe $key"
done
# Every public function of feeder.h.
sed 's/\\//g' "$src/man/libfeeder.3" >"$tmp/lib"
for fn in $(grep -o '^[a-z_ *]*feeder_[a-z_]*(' "$src/client/feeder.h" | grep -o 'feeder_[a-z_]*' | sort -u); do
	grep -q "$fn" "$tmp/lib" || fail "libfeeder.3 does not describe $fn"
done
[ $fails = 0 ] || exit 1
echo "PASS: ${#pages[@]} pages render without warnings; options, keys and functions all documented"
