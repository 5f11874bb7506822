#!/bin/bash
# test_names.sh — a dataset name or path cannot leave the datasets directory:
# names with "../", "/", "." are refused (EBADNAME, fatal), and entries of
# the datasets directory that lead outside it — a symbolic link to a dataset
# elsewhere, a directory whose data.mdb is a link to one elsewhere — are not
# served (ENODATASET), at start and after SIGHUP. A lock.mdb link is harmless
# (datasets are opened with MDB_NOLOCK): its target is never created.
# (test_daemon_wire's test_rescan covers links that stay inside.)
. "$FEEDER_SOURCE/tests/lib/lib.sh"
limits=$build/tests/security/limits_client
need_exe "$limits"
# A dataset outside the served directory, and one inside it.
make_images secret 12 3 5 --unique --resize-shorter 48
mkdir -p "$tmp/outside"
mv "$datasets/secret" "$tmp/outside/secret"
make_images uniq 12 3 5 --unique --resize-shorter 48

ln -s "$tmp/outside/secret" "$datasets/linkdir"
ln -s ../outside/secret "$datasets/rellink"
mkdir "$datasets/linkdata"
ln -s "$tmp/outside/secret/data.mdb" "$datasets/linkdata/data.mdb"
mkdir "$datasets/linklock"
cp "$tmp/outside/secret/data.mdb" "$datasets/linklock/data.mdb"
ln -s "$tmp/outside/secret/lock.mdb" "$datasets/linklock/lock.mdb"

start_daemon || fail "$daemon_why"
"$limits" "$sock" names uniq linkdir rellink linkdata secret || fail "names at start"
# Links made while the daemon runs are not picked up by a rescan either.
ln -s "$tmp/outside/secret" "$datasets/latelink"
kill -HUP "$daemon_pid"
sleep 0.3
"$limits" "$sock" names uniq latelink linkdir || fail "names after SIGHUP"
"$limits" "$sock" connect linklock >/dev/null || fail "linklock (a real data.mdb) was not served"
[ -e "$tmp/outside/secret/lock.mdb" ] && fail "the daemon followed a lock.mdb link out of the datasets"
daemon_alive
grep -q "data.mdb is not a regular file" "$tmp/feederd.log" || fail "the linked data.mdb was not logged"
# each skipped link to a folder is named once per scan
for l in linkdir rellink latelink; do
	grep -q "dataset entry '$l' skipped: it is a symbolic link" "$tmp/feederd.log" \
		|| fail "the symbolic link '$l' was skipped without a log line"
done
echo "PASS: names"
