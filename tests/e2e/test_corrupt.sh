#!/bin/bash
# test_corrupt.sh — a dataset with a record failing its CRC and a record that
# is not a JPEG: by default both are replaced (counted per batch and in
# feederctl status) and the stream goes on; with on_error=fail the stream
# ends with an error.
. "$(dirname "$0")/lib.sh"
make_dataset good 24 3 5
"$client" mkcorrupt "$datasets/good" "$datasets/bad" || fail "mkcorrupt"
rm -rf "$datasets/good"
start_daemon
run_client corrupt bad 2 || fail "e2e_client corrupt"
"$feederctl" --socket "$sock" status --json > "$tmp/status.json" || fail "feederctl status"
repl=$(json_get "$tmp/status.json" replacements)
[ "$repl" -ge 2 ] || fail "feederctl status counts $repl replacements, expected >= 2"
stop_daemon
echo "ok: corrupt records replaced ($repl counted by the daemon), on_error=fail errors"
