#!/usr/bin/env bash
# moto_venv.sh — the virtual environment with moto's S3 server (moto[server]
# from PyPI, the one test dependency Debian does not package), made once
# and shared by every test and benchmark that needs a real S3 server on
# loopback: tools/install-deps makes it, so CI's tests find it ready, and
# the first test to run without it makes it too (under a lock, so parallel
# tests wait for one install). Prints the folder; exits 77 when pip cannot
# reach PyPI, 1 on any other failure.
#
# Where: $FEEDER_MOTO_VENV, else ${XDG_CACHE_HOME:-~/.cache}/feeder/moto-venv.
# An isolated venv (not --system-site-packages): moto's pip dependencies
# (cryptography) would otherwise shadow Debian's and break its pyOpenSSL.
set -u
# Pinned: the tests hold its answers (error codes, log lines) byte for byte.
moto_req='moto[server]==5.2.5'
venv=${FEEDER_MOTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/feeder/moto-venv}
ready() { [ -f "$venv/.feeder-ready-$moto_req" ] && [ -x "$venv/bin/moto_server" ]; }
if ready; then
	echo "$venv"
	exit 0
fi
mkdir -p "$(dirname "$venv")" || exit 1
exec 9>"$venv.lock" || exit 1
flock 9
if ! ready; then
	echo "moto_venv: installing $moto_req into $venv (once)" >&2
	# The ready mark comes last: a half-made venv is made again.
	rm -rf "$venv"
	if ! /usr/bin/python3 -m venv "$venv" >&2; then
		echo "moto_venv: /usr/bin/python3 -m venv failed (apt-get install python3-venv)" >&2
		exit 1
	fi
	if ! "$venv/bin/pip" install -q --disable-pip-version-check "$moto_req" >"$venv.log" 2>&1; then
		rm -rf "$venv"
		if grep -qiE 'connection|resolve|network|timed out|No matching distribution' "$venv.log"; then
			echo "moto_venv: pip cannot reach PyPI to install moto[server]: $(tail -n 1 "$venv.log")" >&2
			exit 77
		fi
		echo "moto_venv: pip install moto[server] failed: $(tail -n 3 "$venv.log" | tr '\n' ' ')" >&2
		exit 1
	fi
	touch "$venv/.feeder-ready-$moto_req"
fi
echo "$venv"
