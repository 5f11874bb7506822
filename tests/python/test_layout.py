"""test_layout.py — the cffi declarations (feeder/_cdef.py, generated from
client/feeder.h and proto/feeder_types.h) against the C compiler's view of
the same headers (via c_reference layout, whose list of structs, fields and
constants is generated from those declarations): every struct size, every
field offset and every constant must agree, or the Python client would read
and write the wrong bytes."""
import json
import os

import pytest

import feeder
from conftest import run, tool
from feeder._lib import ffi, lib


@pytest.fixture(scope="module")
def c_layout():
    return json.loads(run(tool("tests/python/c_reference"), "layout"))


def test_library_is_the_builds():
    build = os.environ["FEEDER_BUILD"]
    assert os.path.realpath(feeder.library_path) == os.path.realpath(
        os.path.join(build, "client", "libfeeder.so.0"))


def test_struct_sizes(c_layout):
    sizes = {k: v for k, v in c_layout.items() if "." not in k and not k.startswith("const ")}
    # every struct the API passes by pointer, and no fewer
    assert {"feeder_stream_opts", "feeder_stream_info", "feeder_batch", "feeder_status",
            "feeder_dataset_status", "feeder_stream_status"} <= set(sizes)
    for name, size in sizes.items():
        assert ffi.sizeof("struct " + name) == size, name


def test_field_offsets(c_layout):
    n = 0
    for key, off in c_layout.items():
        if "." not in key or key.startswith("const "):
            continue
        struct_name, *fields = key.split(".")
        assert ffi.offsetof("struct " + struct_name, *fields) == off, key
        n += 1
    assert n >= 150  # the option structs alone have more


def test_constant_values(c_layout):
    consts = {k[6:]: v for k, v in c_layout.items() if k.startswith("const ")}
    for name, value in consts.items():
        assert getattr(lib, name) == value, name
    # every FEEDER_ constant cffi knows is among those the compiler checked
    mine = {n for n in dir(lib) if n.startswith("FEEDER_") and isinstance(getattr(lib, n), int)}
    assert mine == set(consts)
    assert len(consts) >= 50


def test_options_default_to_the_headers_documented_values():
    """feeder_stream_opts_init through the generated declarations: a few of
    the defaults feeder_types.h documents land in the right fields."""
    o = ffi.new("struct feeder_stream_opts *")
    lib.feeder_stream_opts_init(o)
    assert (o.batch, o.slots, o.shuffle, o.drop_last) == (32, 4, 1, 0)
    assert (o.dtype, o.layout) == (lib.FEEDER_DTYPE_F32, lib.FEEDER_LAYOUT_NCHW)
    assert (o.jpeg.height, o.jpeg.width, o.features.chunk_len, o.wave.bins) == (224, 224, 200, 80)
    assert abs(o.jpeg.flip_p - 0.5) < 1e-7 and o.wave.time_mask_max == 10


def test_strerror_names_codes():
    assert "dataset" in feeder.strerror(lib.FEEDER_ENODATASET).lower()
    assert feeder.strerror(lib.FEEDER_ETIMEDOUT) != feeder.strerror(lib.FEEDER_ECLOSED)
