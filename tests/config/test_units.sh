#!/bin/bash
# test_units.sh — the systemd units (dist/, as configured into the
# build) pass `systemd-analyze verify` without a single warning, and say what
# the issue asks of them: Type=notify, the watchdog, socket activation of a
# SOCK_SEQPACKET socket with mode 0660, and the sandboxing directives; the
# example drop-ins verify on top of the service, and the remote one opens
# the network and the cache directory.
. "$FEEDER_SOURCE/tests/lib/lib.sh"
command -v systemd-analyze >/dev/null || skip "systemd-analyze not installed"

# Can systemd-analyze run here at all? Check a trivial unit first.
printf '[Service]\nType=oneshot\nExecStart=/bin/true\n' > "$tmp/probe.service"
if ! out=$(timeout 30 systemd-analyze verify --man=no "$tmp/probe.service" 2>&1) || [ -n "$out" ]; then
	skip "systemd-analyze verify cannot run in this environment: $out"
fi

svc=$build/dist/feederd.service ; sock=$build/dist/feederd.socket
[ -f "$svc" ] && [ -f "$sock" ] || fail "configured units missing in $build/dist"
# verify insists that ExecStart exists: point it at the built daemon (or any
# executable while the daemon is not built) in a copy.
exe=$build/daemon/feederd ; [ -x "$exe" ] || exe=/bin/true
sed "s|^ExecStart=[^ ]*|ExecStart=$exe|" "$svc" > "$tmp/feederd.service"
cp "$sock" "$tmp/feederd.socket"
out=$(cd "$tmp" && timeout 30 systemd-analyze verify --man=no ./feederd.socket ./feederd.service 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "systemd-analyze verify exited $rc: $out"
[ -z "$out" ] || fail "systemd-analyze verify warned: $out"

# The example drop-ins (dist/, installed as documentation) verify cleanly on
# top of the service: verify reads feederd.service.d/ beside the unit.
mkdir "$tmp/feederd.service.d"
for d in metrics remote; do
	cp "$src/dist/feederd-$d.conf" "$tmp/feederd.service.d/$d.conf"
done
out=$(cd "$tmp" && timeout 30 systemd-analyze verify --man=no ./feederd.socket ./feederd.service 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "systemd-analyze verify with the drop-ins exited $rc: $out"
[ -z "$out" ] || fail "systemd-analyze verify warned about a drop-in: $out"
# ... and a broken drop-in is noticed there (so they are read at all).
printf 'Bogus=1\n' >> "$tmp/feederd.service.d/remote.conf"
out=$(cd "$tmp" && timeout 30 systemd-analyze verify --man=no ./feederd.socket ./feederd.service 2>&1)
grep -q 'remote.conf.*Bogus' <<<"$out" || fail "verify did not read feederd.service.d/: '$out'"
rm -r "$tmp/feederd.service.d"

# A broken unit must be caught by the same check (so the check means something).
printf 'Bogus=1\n' >> "$tmp/feederd.socket"
out=$(cd "$tmp" && timeout 30 systemd-analyze verify --man=no ./feederd.socket 2>&1)
[ -n "$out" ] || fail "systemd-analyze verify did not notice an unknown key"

for want in '^Type=notify$' '^WatchdogSec=' '^NoNewPrivileges=yes$' '^ProtectSystem=strict$' \
	    '^ReadOnlyPaths=' '^RuntimeDirectory=feeder$' '^Requires=feederd.socket$' \
	    '^ExecReload=/bin/kill -HUP \$MAINPID$' "^ExecStart=/.*/feederd --config /.*/feeder/feederd.conf$"; do
	grep -q -- "$want" "$svc" || fail "feederd.service lacks $want"
done
for want in '^ListenSequentialPacket=/run/feeder/feederd.sock$' '^SocketMode=0660$' \
	    '^Service=feederd.service$'; do
	grep -q -- "$want" "$sock" || fail "feederd.socket lacks $want"
done
! grep -n '@[a-z_]*@' "$svc" "$sock" || fail "unsubstituted @variable@ in a unit"
# Remote datasets: the network, and /var/cache/feeder (cache_dir's default)
# writable under ProtectSystem=strict; the secrets in a file of their own.
remote=$src/dist/feederd-remote.conf
for want in '^\[Service\]$' '^PrivateNetwork=no$' '^RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6$' \
	    '^CacheDirectory=feeder$' '^EnvironmentFile=/'; do
	grep -q -- "$want" "$remote" || fail "feederd-remote.conf lacks $want"
done
! grep -q '^[^#]*AWS_SECRET_ACCESS_KEY' "$remote" || fail "feederd-remote.conf holds a secret"
grep -q 'feederd-remote.conf' "$src/dist/meson.build" || fail "dist/meson.build does not install feederd-remote.conf"
echo "ok: units verified"
exit 0
