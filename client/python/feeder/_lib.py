"""_lib.py — libfeeder for Python: the cffi (ABI mode) declarations of
client/feeder.h and the loading of libfeeder.so.

ABI mode means no compiled extension: the package is pure Python and works
with any Python 3 that has cffi (Debian's python3-cffi), whatever its version.
The declarations are not written here: _cdef.py is made from client/feeder.h
and proto/feeder_types.h by the C preprocessor (client/python/gen_cdef.py, run
by Meson at build time and by setup.py at `pip install`), so a header change
reaches Python with the next build. cffi computes the struct layouts from
them itself; tests/python/test_layout.py holds every size, offset and
constant to what a C compiler makes of the same headers.

The library is looked up in this order: $FEEDER_LIBRARY (a path); the build
tree (this package is configured into <build>/client/python/feeder and the
library is <build>/client/libfeeder.so); the install's libdir recorded by
Meson in _paths.py; for a pip-installed package (no _paths.py), libdirs
under /usr/local and /usr; then the dynamic linker's search for
"libfeeder.so.0". If none loads, ImportError lists every place tried.
"""
import os
from typing import Dict, List, Tuple

from cffi import FFI

try:
    from ._cdef import CDEF
except ImportError:
    raise ImportError("feeder: the package has no _cdef.py, the declarations generated from "
                      "feeder.h; import it from a Meson build tree (<build>/client/python) or "
                      "an installed package, not from the source tree") from None

ffi = FFI()
ffi.cdef(CDEF)


def _candidates() -> List[str]:
    env = os.environ.get("FEEDER_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "..", "..", "libfeeder.so.0")]
    try:
        from . import _paths
        out.append(os.path.join(_paths.LIBDIR, "libfeeder.so.0"))
    except ImportError:
        pass
    # pip-installed (no _paths.py): meson install's usual places, then the
    # dynamic linker's own search
    import sysconfig
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in ("/usr/local", "/usr"):
        for lib in ("lib/" + multiarch if multiarch else "lib", "lib64", "lib"):
            p = os.path.join(prefix, lib, "libfeeder.so.0")
            if p not in out:
                out.append(p)
    out.append("libfeeder.so.0")
    return out


def _load() -> Tuple[object, str]:
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ffi.dlopen(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("feeder: cannot load libfeeder; tried " + "; ".join(tried)
                      + " (set FEEDER_LIBRARY to the library's path)")


lib, library_path = _load()


def enum_choices(ctype: str, prefix: str) -> Dict[str, int]:
    """The constants of a C enum as {lower-case name without prefix: value},
    e.g. enum_choices("enum feeder_layout", "FEEDER_LAYOUT_") is {"nchw": 1,
    "nhwc": 2}: the names the Python API accepts are the header's, so an
    enum value added there is accepted here with the next build."""
    return {name[len(prefix):].lower(): value
            for name, value in ffi.typeof(ctype).relements.items() if name.startswith(prefix)}
