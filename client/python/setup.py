"""setup.py — `pip install ./client/python`: the project itself is described
in pyproject.toml; this file adds the two things setuptools does not do on
its own. The cffi declarations (feeder/_cdef.py) are generated from the C
headers by gen_cdef.py, as Meson does, into the build directory: from the
source tree's client/feeder.h and proto/feeder_types.h when they are there,
else from the installed ones (pkg-config feeder); this needs a C compiler
($CC, else cc). And everything setuptools writes (build/, *.egg-info) goes
to a temporary directory, so that the source tree stays as it was.
"""
import atexit
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.command.egg_info import egg_info

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ beside gen_cdef.py
import gen_cdef  # noqa: E402

_scratch = []


def scratch(name):
    """A directory outside the source tree, removed when setup.py ends."""
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="feeder-pip-"))
        atexit.register(shutil.rmtree, _scratch[0], True)
    path = os.path.join(_scratch[0], name)
    os.makedirs(path, exist_ok=True)
    return path


def headers():
    """(feeder.h, feeder_types.h, include dirs): the source tree's, else the
    installed ones that pkg-config names."""
    src = os.path.normpath(os.path.join(HERE, "..", ".."))
    tree = (os.path.join(src, "client", "feeder.h"), os.path.join(src, "proto", "feeder_types.h"))
    if all(os.path.isfile(h) for h in tree):
        return tree + ([os.path.dirname(h) for h in tree],)
    try:
        inc = subprocess.run(["pkg-config", "--variable=includedir", "feeder"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True).stdout.strip()
    except OSError:
        inc = ""
    found = tuple(os.path.join(inc, h) for h in ("feeder.h", "feeder_types.h"))
    if not inc or not all(os.path.isfile(h) for h in found):
        raise SystemExit("feeder: cannot find feeder.h and feeder_types.h to generate the cffi "
                         "declarations from: install from a Feeder source tree, or install "
                         "libfeeder (meson install) so that pkg-config finds them")
    return found + ([inc],)


class BuildPy(build_py):
    def run(self):
        super().run()
        h, types, dirs = headers()
        cc = shlex.split(os.environ.get("CC", "cc"))
        out = os.path.join(self.build_lib, "feeder", "_cdef.py")
        try:
            cdef = gen_cdef.make_cdef(cc, h, dirs, [h, types])
        except gen_cdef.GenError as e:
            raise SystemExit("feeder: %s" % e) from None
        gen_cdef.write(out, gen_cdef.module_text(cdef, ["feeder.h", "feeder_types.h"]))


class Build(build):
    def initialize_options(self):
        super().initialize_options()
        self.build_base = scratch("build")


class EggInfo(egg_info):
    def initialize_options(self):
        super().initialize_options()
        self.egg_base = scratch("egg-info")


setup(cmdclass={"build_py": BuildPy, "build": Build, "egg_info": EggInfo})
