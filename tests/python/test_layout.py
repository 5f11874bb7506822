"""test_layout.py — the cffi declarations in feeder/_lib.py against the C
compiler's view of client/feeder.h (via c_reference layout): every struct
size, every field offset and every enum value must agree, or the Python
client would read and write the wrong bytes."""
import json
import os

import pytest

from conftest import run, tool

feeder = pytest.importorskip("feeder")
from feeder._lib import ffi, lib  # noqa: E402


@pytest.fixture(scope="module")
def c_layout():
    return json.loads(run(tool("tests/python/c_reference"), "layout"))


def test_library_is_the_builds(c_layout):
    build = os.environ["FEEDER_BUILD"]
    assert os.path.realpath(feeder.library_path) == os.path.realpath(
        os.path.join(build, "client", "libfeeder.so.0"))


def test_struct_sizes(c_layout):
    for name in ("feeder_stream_opts", "feeder_stream_info", "feeder_batch", "feeder_status"):
        assert ffi.sizeof("struct " + name) == c_layout[name], name


def test_field_offsets(c_layout):
    n = 0
    for key, off in c_layout.items():
        if "." not in key or key.startswith("enum "):
            continue
        struct_name, *fields = key.split(".")
        assert ffi.offsetof("struct " + struct_name, *fields) == off, key
        n += 1
    assert n >= 50


def test_enum_values(c_layout):
    n = 0
    for key, value in c_layout.items():
        if key.startswith("enum "):
            assert getattr(lib, key[5:]) == value, key
            n += 1
    assert n == 41


def test_strerror_names_codes():
    assert "dataset" in feeder.strerror(lib.FEEDER_ENODATASET).lower()
    assert feeder.strerror(lib.FEEDER_ETIMEDOUT) != feeder.strerror(lib.FEEDER_ECLOSED)
