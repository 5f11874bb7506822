#!/bin/bash
# test_activation.sh — socket activation as feederd.socket does it: a
# SOCK_SEQPACKET listener made by systemd-socket-activate is handed over
# (LISTEN_FDS, sd_listen_fds), feederd serves on it instead of binding its
# configured path, streams work through it, and SIGTERM still exits 0.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
act=$(command -v systemd-socket-activate) || skip "systemd-socket-activate not installed"
make_images imgs 8 2 8
# Without --accept the tool execs feederd itself (same pid) on the first
# connection, passing the listening socket as fd 3; feederd's own socket
# is another path.
daemon_wrap=("$act" --seqpacket -l "$sock")
start_daemon --socket "$tmp/configured.sock" --workers 1 \
	|| fail "no answer through the activated socket: $daemon_why"
daemon_alive # (its status in $tmp/status.json)
[ "$(json_get "$tmp/status.json" datasets)" = 1 ] || fail "status: $(cat "$tmp/status.json")"
[ -e "$tmp/configured.sock" ] && fail "feederd bound its configured socket despite activation"
run_client epoch imgs 3 || fail "streaming through the activated socket"
stop_daemon || fail "$daemon_why"
echo "ok: socket activation"
