# env.sh — set up the shell for this Feeder bundle (written by tools/bundle
# from tools/bundle_env.sh). Source it from bash or zsh:
#
#     . /path/to/feeder-VERSION/env.sh
#
# It puts the bundle's programs on PATH, its man pages on MANPATH and its
# Python package on PYTHONPATH, and finds the CUDA libraries the programs
# were linked against (@CUDA_LIBS@) on this machine: in $CUDA_HOME, in
# /usr/local/cuda*, in the nvidia-* Python packages of the Python it uses
# (PyTorch's pip install brings them), or in the linker's cache. One it
# cannot find is named on one line and env.sh returns 1. When that Python
# lacks cffi, the bundled wheel for its version is unpacked into a private
# folder (the bundle's python-deps/, or ~/.cache/feeder when the bundle is
# read-only). FEEDER_PYTHON picks the Python (default: python3 on PATH).

_feeder_src=${FEEDER_HOME:-}
if [ -z "$_feeder_src" ]; then
	if [ -n "${BASH_SOURCE:-}" ]; then
		_feeder_src=${BASH_SOURCE[0]}
	elif [ -n "${ZSH_VERSION:-}" ]; then
		eval '_feeder_src=${(%):-%x}'
	else
		_feeder_src=$0
	fi
	_feeder_src=$(cd "$(dirname "$_feeder_src")" && pwd)
fi
export FEEDER_HOME=$_feeder_src

_feeder_fail() { echo "feeder env.sh: $*" >&2; }

# Folders that may hold CUDA's libraries, most specific first.
_feeder_cuda_dirs() {
	local py=$1 d
	for d in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/lib} /usr/local/cuda/lib64 \
		/usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64; do
		[ -d "$d" ] && echo "$d"
	done
	if [ -n "$py" ]; then
		"$py" - <<'PY' 2>/dev/null
import glob, os, site, sys
roots = [p for p in sys.path if p and os.path.isdir(p)]
try:
    roots += site.getsitepackages() + [site.getusersitepackages()]
except AttributeError:
    pass
seen = set()
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib")) +
                    glob.glob(os.path.join(r, "nvidia", "cu*", "lib")) +
                    glob.glob(os.path.join(r, "torch", "lib"))):
        if d not in seen:
            seen.add(d)
            print(d)
PY
	fi
}

# The folder that holds library $1, from the candidates on stdin; or the
# linker cache's; empty if none.
_feeder_find_lib() {
	local name=$1 d
	while read -r d; do
		if [ -e "$d/$name" ]; then
			echo "$d"
			return 0
		fi
	done
	d=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }')
	[ -n "$d" ] && dirname "$d"
	return 0
}

# cffi for the chosen Python: its own, or the bundled wheel unpacked privately.
_feeder_python_deps() {
	local py=$1 tag dir w
	"$py" -c 'import cffi' >/dev/null 2>&1 && return 0
	tag=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])') || return 0
	set -- "$FEEDER_HOME"/wheels/cffi-*-"$tag"-*.whl
	if [ ! -e "$1" ]; then
		_feeder_fail "$py has no cffi and the bundle carries cffi for Python @PY_VERSIONS@ only:" \
			"the Python client will not import there (pip install cffi)"
		return 0
	fi
	dir=$FEEDER_HOME/python-deps/$tag
	if ! { [ -d "$dir" ] || mkdir -p "$dir" 2>/dev/null; } || [ ! -w "$dir" ]; then
		dir=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/feeder/python-deps/$tag
	fi
	if [ ! -e "$dir/.installed" ]; then
		mkdir -p "$dir" || { _feeder_fail "cannot create $dir"; return 1; }
		for w in "$1" "$FEEDER_HOME"/wheels/pycparser-*.whl; do
			"$py" -m zipfile -e "$w" "$dir" || { _feeder_fail "cannot unpack $w into $dir"; return 1; }
		done
		: >"$dir/.installed"
	fi
	PYTHONPATH=$dir${PYTHONPATH:+:$PYTHONPATH}
}

_feeder_setup() {
	local py lib dir dirs= missing=
	py=${FEEDER_PYTHON:-$(command -v python3 2>/dev/null)}
	for lib in @CUDA_LIBS@; do
		dir=$(_feeder_cuda_dirs "$py" | _feeder_find_lib "$lib")
		if [ -z "$dir" ]; then
			missing="$missing $lib"
			continue
		fi
		case ":$dirs:" in *":$dir:"*) ;; *) dirs=${dirs:+$dirs:}$dir ;; esac
	done
	# NCCL is optional (xvec loads it for data parallel training on GPUs).
	dir=$(_feeder_cuda_dirs "$py" | _feeder_find_lib libnccl.so.2)
	if [ -n "$dir" ]; then
		case ":$dirs:" in *":$dir:"*) ;; *) dirs=${dirs:+$dirs:}$dir ;; esac
	fi
	export PATH=$FEEDER_HOME/bin${PATH:+:$PATH}
	export MANPATH=$FEEDER_HOME/share/man:${MANPATH:-}
	# The bundle's own libraries are found through each program's RPATH, not
	# LD_LIBRARY_PATH: that would put them before the system's for every
	# other program of the shell too.
	if [ -n "$dirs" ]; then
		export LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
	export FEEDER_LIBRARY=$FEEDER_HOME/lib/libfeeder.so.0
	PYTHONPATH=$FEEDER_HOME/python${PYTHONPATH:+:$PYTHONPATH}
	if [ -n "$py" ]; then
		_feeder_python_deps "$py" || return 1
	fi
	export PYTHONPATH
	if [ -n "$missing" ]; then
		_feeder_fail "CUDA libraries not found:$missing (looked in \$CUDA_HOME, /usr/local/cuda*," \
			"${py:-python3}'s nvidia-* packages and the linker cache): install CUDA 13 or set CUDA_HOME"
		return 1
	fi
	return 0
}

_feeder_setup
_feeder_rc=$?
unset -f _feeder_setup _feeder_python_deps _feeder_find_lib _feeder_cuda_dirs _feeder_fail
unset _feeder_src
return $_feeder_rc 2>/dev/null || exit $_feeder_rc
