#!/bin/bash
# test_access.sh — who may connect. feederd creates its socket 0660 with the
# group `socket_group`; with allow_users/allow_groups set, the credentials
# the kernel reports (SO_PEERCRED, SO_PEERGROUPS) decide: a user outside
# them is refused with FEEDER_EDENIED and a logged reason, users named in
# allow_users or belonging (primary or supplementary) to a group in
# allow_groups are served, and a user outside socket_group cannot even
# connect (EACCES). Makes its own users and groups with useradd/groupadd and
# removes them on exit; skipped when not root.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
limits=$build/tests/security/limits_client
need_exe "$limits"
[ "$(id -u)" -eq 0 ] || skip "creating test users needs root (running as uid $(id -u))"
for t in useradd userdel groupadd groupdel setpriv; do
	command -v $t >/dev/null || skip "$t is not installed"
done

sfx=$$
sockgrp=fdsock$sfx okgrp=fdok$sfx
u_named=fdnam$sfx u_denied=fdden$sfx u_prim=fdpri$sfx u_supp=fdsup$sfx u_out=fdout$sfx
users=() groups=()
cleanup_ids() {
	for u in "${users[@]}"; do userdel "$u" >/dev/null 2>&1; done
	for g in "${groups[@]}"; do groupdel "$g" >/dev/null 2>&1; done
}
at_exit cleanup_ids
add_group() { groupadd "$1" || fail "groupadd $1"; groups+=("$1"); }
add_user() { # NAME PRIMARY [SUPPLEMENTARY]
	useradd -M -N -d /nonexistent -s /usr/sbin/nologin -g "$2" ${3:+-G "$3"} "$1" \
		|| fail "useradd $1"
	users+=("$1")
}
add_group "$sockgrp"
add_group "$okgrp"
add_user "$u_named" "$sockgrp"
add_user "$u_denied" "$sockgrp"
add_user "$u_prim" "$okgrp" "$sockgrp"
add_user "$u_supp" "$sockgrp" "$okgrp"
add_user "$u_out" nogroup

make_images uniq 12 3 5 --unique --resize-shorter 48
# Other users reach the socket through $tmp, and run a copy of the client
# (the build tree may be private).
chmod 0755 "$tmp"
mkdir -m 0755 "$tmp/bin"
cp "$limits" "$tmp/bin/"
find "$build/client" -maxdepth 1 -name 'libfeeder.so*' ! -type d -exec cp -P {} "$tmp/bin/" \;
chmod -R a+rX "$tmp/bin"

start_daemon --socket-group "$sockgrp" --allow-users "$u_named" --allow-groups "$okgrp" \
	|| fail "$daemon_why"
got=$(stat -c '%a %G' "$sock")
[ "$got" = "660 $sockgrp" ] || fail "socket is '$got', want '660 $sockgrp'"
echo "socket: $got"

as_user() { # USER: run the client as USER, with its groups from /etc/group
	setpriv --reuid "$1" --regid "$(id -g "$1")" --init-groups \
		env LD_LIBRARY_PATH="$tmp/bin" "$tmp/bin/limits_client" "$sock" connect uniq 2>&1
}
expect_served() {
	local out
	out=$(as_user "$1") || fail "$1 ($2) was not served: $out"
	echo "$1 ($2): $out"
}
expect_served "$u_named" "in allow_users"
expect_served "$u_prim" "primary group in allow_groups"
expect_served "$u_supp" "supplementary group in allow_groups"
out=$(as_user "$u_denied"); rc=$?
[ $rc -eq 3 ] || fail "$u_denied (not allowed) got exit $rc: $out"
case "$out" in *"denied by the daemon"*"not allowed"*) ;; *) fail "$u_denied: '$out', want EDENIED" ;; esac
echo "$u_denied (not allowed): $out"
uid_denied=$(id -u "$u_denied")
grep -q "uid $uid_denied.*not in allow_users/allow_groups; refused" "$tmp/feederd.log" \
	|| fail "the refusal of uid $uid_denied was not logged"
grep "uid $uid_denied" "$tmp/feederd.log" | grep refused | head -n 1
out=$(as_user "$u_out"); rc=$?
[ $rc -eq 3 ] && [[ "$out" == *"ermission denied"* || "$out" == *EACCES* || "$out" == *"-13"* ]] \
	|| fail "$u_out (outside socket_group) got exit $rc: $out"
echo "$u_out (outside socket_group): $out"
# root, the daemon's own user, is always served.
"$limits" "$sock" connect uniq >/dev/null || fail "root was not served"
daemon_alive
stop_daemon || fail "$daemon_why"

# Without allow lists every user who can open the socket is served.
start_daemon --socket-group "$sockgrp" || fail "$daemon_why"
expect_served "$u_denied" "no allow lists"
stop_daemon || fail "$daemon_why"

# A feederd that cannot give its socket the group asked for does not start
# (here: run as a user outside that group).
cp "$feederd" "$tmp/bin/"
mkdir -m 0755 "$tmp/run-out"
chown "$u_out" "$tmp/run-out"
out=$(setpriv --reuid "$u_out" --regid "$(id -g "$u_out")" --init-groups \
	"$tmp/bin/feederd" --config /dev/null --socket "$tmp/run-out/s.sock" --datasets "$datasets" \
	--socket-group "$sockgrp" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "feederd started although it cannot chown its socket to $sockgrp"
case "$out" in *"mode 0660, group $sockgrp"*) ;; *) fail "feederd said: $out" ;; esac
[ -e "$tmp/run-out/s.sock" ] && fail "feederd left a socket behind"
echo "socket_group not possible: exit $rc: $(grep -m1 "group $sockgrp" <<<"$out")"
echo "PASS: access"
