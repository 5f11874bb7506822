"""pipelines.py — what the daemon does to each sample, as Python values.

A Loader takes pipeline=Jpeg(...) for images or pipeline=Features(...) for
feature matrices (the x-vector TDNN's input); the strings "jpeg" and
"features" mean the defaults. Each class writes its fields into libfeeder's
struct feeder_stream_opts; a field left at None keeps libfeeder's default
(documented in client/feeder.h), so the defaults live in one place. Ranges
are checked by the daemon, which answers with a sentence naming the field.
"""
from .errors import OptionError
from ._lib import lib


def _pair(name, value):
    try:
        a, b = value
        return float(a), float(b)
    except (TypeError, ValueError):
        raise OptionError("%s must be a pair of numbers (low, high), not %r" % (name, value)) from None


def _choice(name, value, table):
    key = str(value).lower()
    if key not in table:
        raise OptionError("%s must be one of %s, not %r" % (name, ", ".join(sorted(table)), value))
    return table[key]


class Jpeg:
    """Decode JPEG samples, crop, resize, flip and normalize.

    size: output side (int) or (height, width); train: RandomResizedCrop
    (scale, ratio) + horizontal flip with probability flip_p, else resize the
    shorter side to size * resize_ratio and take the center crop; mean/std:
    per channel on [0, 1] pixels (ignored for dtype uint8)."""

    kind = "jpeg"

    def __init__(self, size=224, train=True, scale=None, ratio=None, flip_p=None,
                 resize_ratio=None, mean=None, std=None):
        if isinstance(size, int):
            size = (size, size)
        try:
            self.height, self.width = (int(v) for v in size)
        except (TypeError, ValueError):
            raise OptionError("Jpeg size must be an int or (height, width), not %r" % (size,)) from None
        self.train = bool(train)
        self.scale = None if scale is None else _pair("Jpeg scale", scale)
        self.ratio = None if ratio is None else _pair("Jpeg ratio", ratio)
        self.flip_p = None if flip_p is None else float(flip_p)
        self.resize_ratio = None if resize_ratio is None else float(resize_ratio)
        self.mean = None if mean is None else self._triple("mean", mean)
        self.std = None if std is None else self._triple("std", std)

    @staticmethod
    def _triple(name, value):
        try:
            out = [float(v) for v in value]
        except (TypeError, ValueError):
            out = []
        if len(out) != 3:
            raise OptionError("Jpeg %s must be three numbers (R, G, B), not %r" % (name, value))
        return out

    def fill(self, o):
        o.pipeline = lib.FEEDER_PIPE_JPEG
        j = o.jpeg
        j.height, j.width = self.height, self.width
        j.train = int(self.train)
        if self.scale is not None:
            j.scale_min, j.scale_max = self.scale
        if self.ratio is not None:
            j.ratio_min, j.ratio_max = self.ratio
        if self.flip_p is not None:
            j.flip_p = self.flip_p
        if self.resize_ratio is not None:
            j.resize_ratio = self.resize_ratio
        if self.mean is not None:
            j.mean = self.mean
        if self.std is not None:
            j.std = self.std

    def __repr__(self):
        return "Jpeg(size=(%d, %d), train=%r)" % (self.height, self.width, self.train)


class Features:
    """Cut fixed-length chunks out of feature matrices (frames x dim) and
    normalize them; batches are (batch, feat_dim, chunk_len).

    chunk_len: frames per example; pad: "repeat" (loop short utterances) or
    "skip"; cmn: "none", "utt" or "sliding" mean normalization over
    cmn_window frames; cvn: also variance; train: random chunk, else the
    centered one."""

    kind = "features"
    _PAD = {"repeat": lib.FEEDER_FEAT_PAD_REPEAT, "skip": lib.FEEDER_FEAT_PAD_SKIP}
    _CMN = {"none": lib.FEEDER_FEAT_CMN_NONE, "utt": lib.FEEDER_FEAT_CMN_UTT,
            "sliding": lib.FEEDER_FEAT_CMN_SLIDING}

    def __init__(self, chunk_len=None, pad=None, cmn=None, cmn_window=None, cvn=None, train=True):
        self.chunk_len = None if chunk_len is None else int(chunk_len)
        self.pad = None if pad is None else _choice("Features pad", pad, self._PAD)
        self.cmn = None if cmn is None else _choice("Features cmn", cmn, self._CMN)
        self.cmn_window = None if cmn_window is None else int(cmn_window)
        self.cvn = None if cvn is None else bool(cvn)
        self.train = bool(train)

    def fill(self, o):
        o.pipeline = lib.FEEDER_PIPE_FEATURES
        f = o.features
        if self.chunk_len is not None:
            f.chunk_len = self.chunk_len
        if self.pad is not None:
            f.pad = self.pad
        if self.cmn is not None:
            f.cmn = self.cmn
        if self.cmn_window is not None:
            f.cmn_window = self.cmn_window
        if self.cvn is not None:
            f.cvn = int(self.cvn)
        f.train = int(self.train)

    def __repr__(self):
        return "Features(chunk_len=%r, train=%r)" % (self.chunk_len, self.train)


def as_pipeline(p):
    """A Jpeg or Features from what the Loader was given."""
    if isinstance(p, (Jpeg, Features)):
        return p
    if isinstance(p, str):
        if p.lower() == "jpeg":
            return Jpeg()
        if p.lower() == "features":
            return Features()
    raise OptionError("pipeline must be feeder.Jpeg(...), feeder.Features(...), 'jpeg' or "
                      "'features', not %r" % (p,))
