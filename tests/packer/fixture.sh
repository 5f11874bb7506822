# fixture.sh — the packer scripts' checks, on top of tests/lib/lib.sh (sourced
# here): of what expect_rc leaves in $tmp/out and $tmp/err, of what a refused
# pack leaves behind, of datasets, and of a command's peak memory.
. "$FEEDER_SOURCE/tests/lib/lib.sh"

# has [GREP-FLAG] PATTERN: $tmp/err holds PATTERN; out_has: $tmp/out does.
has() { grep -q "${@:1:$#-1}" -- "${!#}" "$tmp/err" || fail "stderr lacks '${!#}': $(cat "$tmp/err")"; }
out_has() { grep -q "${@:1:$#-1}" -- "${!#}" "$tmp/out" || fail "stdout lacks '${!#}': $(cat "$tmp/out")"; }
one_line() { [ "$(wc -l <"$tmp/err")" = 1 ] || fail "expected one line on stderr: $(cat "$tmp/err")"; }
# bad_samples N: verify's output names exactly N samples.
bad_samples() { [ "$(grep -c '^sample ' "$tmp/out")" = "$1" ] || fail "not $1 bad samples: $(cat "$tmp/out")"; }

# no_dest DEST: a refused pack left neither DEST nor its temporary folder.
no_dest() {
	[ ! -e "$1" ] || fail "a refused pack left $1"
	! compgen -G "$1.tmp-*" >/dev/null || fail "a refused pack left $1.tmp-*"
}

# inspect_has DS PATTERN: packer inspect --json DS says PATTERN.
inspect_has() {
	expect_rc 0 "$packer" inspect --json "$1"
	out_has "$2"
}

# payload_is DS I FILE: packer cat of sample I of DS gives FILE's bytes.
payload_is() { "$packer" cat "$1" "$2" | cmp -s - "$3" || fail "sample $2 of $1 is not $3"; }

# index_of JSON SUFFIX: the sample (in dsread.py's JSON) whose name ends so.
index_of() {
	"$py" -c 'import json, sys
print([s["index"] for s in json.load(open(sys.argv[1]))["samples"] if s["name"].endswith(sys.argv[2])][0])' "$1" "$2"
}

# pack_and_stop DEST FILE SRC [OPTIONS...]: start a slow pack of SRC
# (resize on one thread) into DEST and stop it (SIGSTOP) once FILE exists
# in its temporary folder; its pid in $pid.
pack_and_stop() {
	local dest=$1 file=$2 src=$3 t0=$SECONDS
	shift 3
	"$packer" pack images --resize-shorter 300 --threads 1 "$@" "$src" "$dest" 2>"$tmp/pack.err" &
	pid=$!
	until compgen -G "$dest.tmp-*/$file" >/dev/null; do
		kill -0 $pid 2>/dev/null || fail "pack ended before $file appeared: $(cat "$tmp/pack.err")"
		((SECONDS - t0 > 20)) && fail "no temporary $file after 20 s"
		sleep 0.01
	done
	kill -STOP $pid
	[ -e "$dest" ] && fail "pack finished before it could be stopped"
	return 0
}

# "${timed[@]}" COMMAND...: COMMAND with its peak memory in $tmp/maxrss,
# where GNU time is there and no sanitizer (whose shadow memory would
# dominate it); peak_below KB WHAT: that peak, where measured, is under KB.
timed=()
if [ -x /usr/bin/time ] && ! ldd "$packer" | grep -q libasan; then
	timed=(/usr/bin/time -f "%M" -o "$tmp/maxrss")
fi
peak_below() {
	[ -s "$tmp/maxrss" ] || return 0
	local kb
	kb=$(tail -n 1 "$tmp/maxrss")
	rm -f "$tmp/maxrss"
	[ "$kb" -lt "$1" ] || fail "$2: peak memory $kb KB"
}
