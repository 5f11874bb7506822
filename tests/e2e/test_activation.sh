#!/bin/bash
# test_activation.sh — socket activation as feederd.socket does it: a
# SOCK_SEQPACKET listener made by systemd-socket-activate is handed over
# (LISTEN_FDS, sd_listen_fds), feederd serves on it instead of binding its
# configured path, streams work through it, and SIGTERM still exits 0.
. "$(dirname "$0")/lib.sh"
act=$(command -v systemd-socket-activate) || skip "systemd-socket-activate not installed"
make_dataset imgs 8 2 8
cat > "$tmp/feederd.conf" <<CONF
socket = $tmp/configured.sock
datasets = $datasets
workers = 1
CONF
# Without --accept the tool execs feederd itself (same pid) on the first
# connection, passing the listening socket as fd 3.
"$act" --seqpacket -l "$sock" "$feederd" --config "$tmp/feederd.conf" >>"$tmp/feederd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
[ -S "$sock" ] || fail "systemd-socket-activate did not listen"
"$feederctl" --socket "$sock" --timeout 10000 status --json > "$tmp/status.json" \
	|| fail "no answer through the activated socket"
[ "$(json_get "$tmp/status.json" datasets)" = 1 ] || fail "status: $(cat "$tmp/status.json")"
[ -e "$tmp/configured.sock" ] && fail "feederd bound its configured socket despite activation"
run_client epoch imgs 3 || fail "streaming through the activated socket"
stop_daemon
echo "ok: socket activation"
