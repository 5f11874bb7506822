#!/usr/bin/env bash
# test_top.sh — `feederctl top` full screen, driven in tmux as a person
# would: it draws the daemon and a running stream, refreshes, and quits on
# 'q' within a second, leaving the pane's shell usable (the terminal mode
# restored: what is typed afterwards is echoed).
. "$FEEDER_SOURCE/tests/lib/lib.sh"
command -v tmux >/dev/null || skip "tmux is not installed (tools/install-deps installs it)"
make_images small 24 2 5
start_daemon || fail "$daemon_why"
spawn_client /dev/null datawait small 100000 5 16 4
sess=feeder-top-$$
export TMUX_TMPDIR=$tmp
tmux new-session -d -s "$sess" -x 160 -y 30 bash --norc --noprofile || fail "tmux"
at_exit 'tmux kill-session -t "$sess" 2>/dev/null'
tmux send-keys -t "$sess" "$feederctl --socket $sock top --interval 300" Enter
# pane_has PATTERN...: the pane (in $tmp/pane.txt) shows each PATTERN.
pane_has() {
	local p
	tmux capture-pane -t "$sess" -p > "$tmp/pane.txt" || return 1
	for p; do grep -q "$p" "$tmp/pane.txt" || return 1; done
}
wait_until 5 pane_has WAIT10S small || fail "top did not draw a stream line: $(cat "$tmp/pane.txt")"
grep -q "q quits" "$tmp/pane.txt" || fail "no 'q quits' hint"
first=$(grep -c "feederd at" "$tmp/pane.txt")
[ "$first" = 1 ] || fail "the screen is not cleared between frames ($first headers)"
tmux send-keys -t "$sess" q
# then, once top has quit, the shell runs what is typed
top_quit() {
	tmux send-keys -t "$sess" "echo top-exited-\$?" Enter
	sleep 0.1
	pane_has "^top-exited-0"
}
wait_until 3 top_quit || fail "top did not quit on q: $(tail -5 "$tmp/pane.txt")"
grep -q "echo top-exited" "$tmp/pane.txt" || fail "the terminal does not echo after top: $(tail -5 "$tmp/pane.txt")"
echo "PASS: top drew the stream, quit on q with status 0, terminal echoes again"
