"""pipelines.py — what the daemon does to each sample, as Python values.

A Loader takes pipeline=Jpeg(...) for images or pipeline=Features(...) for
feature matrices (the x-vector TDNN's input); the strings "jpeg" and
"features" mean the defaults. Each class writes its fields into libfeeder's
struct feeder_stream_opts; a field left at None keeps libfeeder's default
(documented in client/feeder.h), so the defaults live in one place. Ranges
are checked by the daemon, which answers with a sentence naming the field.
"""
from typing import Dict, Optional, Sequence, Tuple, Union

from ._lib import enum_choices, ffi, lib
from .errors import OptionError

# The names each choice takes are the C enums' (feeder_types.h).
_PAD = enum_choices("enum feeder_feat_pad", "FEEDER_FEAT_PAD_")           # repeat, skip
_CMN = enum_choices("enum feeder_feat_cmn", "FEEDER_FEAT_CMN_")           # none, utt, sliding
_WAVE_FEATURES = enum_choices("enum feeder_wave_features", "FEEDER_WAVE_")  # fbank, mfcc
_SPEED_LABELS = enum_choices("enum feeder_speed_labels", "FEEDER_SPEED_")  # same, new

Pair = Tuple[float, float]


def _pair(name: str, value: Sequence[float]) -> Pair:
    try:
        a, b = value
        return float(a), float(b)
    except (TypeError, ValueError):
        raise OptionError("%s must be a pair of numbers (low, high), not %r" % (name, value)) from None


def _choice(name: str, value: str, table: Dict[str, int]) -> int:
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

    def __init__(self, size: Union[int, Tuple[int, int]] = 224, train: bool = True,
                 scale: Optional[Pair] = None, ratio: Optional[Pair] = None,
                 flip_p: Optional[float] = None, resize_ratio: Optional[float] = None,
                 mean: Optional[Sequence[float]] = None,
                 std: Optional[Sequence[float]] = None) -> None:
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
    def _triple(name: str, value: Sequence[float]) -> list:
        try:
            out = [float(v) for v in value]
        except (TypeError, ValueError):
            out = []
        if len(out) != 3:
            raise OptionError("Jpeg %s must be three numbers (R, G, B), not %r" % (name, value))
        return out

    def fill(self, o) -> None:
        """Write these options into a struct feeder_stream_opts (cdata)."""
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

    def __repr__(self) -> str:
        return "Jpeg(size=(%d, %d), train=%r)" % (self.height, self.width, self.train)


class Features:
    """Cut fixed-length chunks out of feature matrices (frames x dim) and
    normalize them; batches are (batch, feat_dim, chunk_len).

    chunk_len: frames per example; pad: "repeat" (loop short utterances) or
    "skip"; cmn: "none", "utt" or "sliding" mean normalization over
    cmn_window frames; cvn: also variance; train: random chunk, else the
    centered one."""

    kind = "features"

    def __init__(self, chunk_len: Optional[int] = None, pad: Optional[str] = None,
                 cmn: Optional[str] = None, cmn_window: Optional[int] = None,
                 cvn: Optional[bool] = None, train: bool = True) -> None:
        self.chunk_len = None if chunk_len is None else int(chunk_len)
        self.pad = None if pad is None else _choice("Features pad", pad, _PAD)
        self.cmn = None if cmn is None else _choice("Features cmn", cmn, _CMN)
        self.cmn_window = None if cmn_window is None else int(cmn_window)
        self.cvn = None if cvn is None else bool(cvn)
        self.train = bool(train)

    def fill(self, o) -> None:
        """Write these options into a struct feeder_stream_opts (cdata)."""
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

    def __repr__(self) -> str:
        return "Features(chunk_len=%r, train=%r)" % (self.chunk_len, self.train)


class Wave:
    """Augmented features computed by feederd from a waveform dataset
    (packer pack audio --store wave); batches are (batch, feat_dim,
    chunk_len) like Features'.

    chunk_len: frames of 10 ms; train: a random chunk and augmentation, else
    the centred chunk as it is. features "fbank" (bins mel bins) or "mfcc"
    (ceps cepstra); dither; cmn "none", "utt" (the chunk) or "sliding"
    (cmn_window), cvn. Augmentation, each with its probability: noise=NAME
    (a served noise dataset with classes noise/music/speech) with noise_p and
    the SNR ranges snr_noise=(lo, hi), snr_music, snr_babble and
    babble=(min, max) recordings; rir=NAME with reverb_p; speed_p (0.9 or
    1.1) with speed_labels "same" or "new" (a new speaker per factor: labels
    up to 3 x classes); gain_p with gain_db=(lo, hi); specaug_p with
    time_masks, time_mask_max, freq_masks, freq_mask_max. Unset options
    take the daemon's defaults (feeder_types.h)."""

    kind = "features"
    _NUMBERS = ("chunk_len", "bins", "ceps", "dither", "cmn_window", "noise_p", "reverb_p",
                "speed_p", "gain_p", "specaug_p", "time_masks", "time_mask_max", "freq_masks",
                "freq_mask_max")
    _RANGES = {"snr_noise": ("snr_noise_min", "snr_noise_max"),
               "snr_music": ("snr_music_min", "snr_music_max"),
               "snr_babble": ("snr_babble_min", "snr_babble_max"),
               "babble": ("babble_min", "babble_max"),
               "gain_db": ("gain_min_db", "gain_max_db")}

    def __init__(self, chunk_len: Optional[int] = None, train: bool = True,
                 features: Optional[str] = None, bins: Optional[int] = None,
                 ceps: Optional[int] = None, dither: Optional[float] = None,
                 pad: Optional[str] = None, cmn: Optional[str] = None,
                 cmn_window: Optional[int] = None, cvn: Optional[bool] = None,
                 noise: Optional[str] = None, noise_p: Optional[float] = None,
                 snr_noise: Optional[Pair] = None, snr_music: Optional[Pair] = None,
                 snr_babble: Optional[Pair] = None, babble: Optional[Tuple[int, int]] = None,
                 rir: Optional[str] = None, reverb_p: Optional[float] = None,
                 speed_p: Optional[float] = None, speed_labels: Optional[str] = None,
                 gain_p: Optional[float] = None, gain_db: Optional[Pair] = None,
                 specaug_p: Optional[float] = None, time_masks: Optional[int] = None,
                 time_mask_max: Optional[int] = None, freq_masks: Optional[int] = None,
                 freq_mask_max: Optional[int] = None) -> None:
        self.train = bool(train)
        self.opts = {}
        given = dict(locals())
        fields = dict(ffi.typeof("struct feeder_wave_opts").fields)
        floats = {k for k, f in fields.items() if f.type.cname == "float"}
        for k in self._NUMBERS:
            if given[k] is not None:
                try:
                    self.opts[k] = float(given[k]) if k in floats else int(given[k])
                except (TypeError, ValueError):
                    raise OptionError("Wave %s must be a number, not %r" % (k, given[k])) from None
        for k, (lo, hi) in self._RANGES.items():
            if given[k] is not None:
                a, b = _pair("Wave " + k, given[k])
                self.opts[lo], self.opts[hi] = (int(a), int(b)) if k == "babble" else (a, b)
        if features is not None:
            self.opts["features"] = _choice("Wave features", features, _WAVE_FEATURES)
        if speed_labels is not None:
            self.opts["speed_labels"] = _choice("Wave speed_labels", speed_labels,
                                                _SPEED_LABELS)
        if pad is not None:
            self.opts["pad"] = _choice("Wave pad", pad, _PAD)
        if cmn is not None:
            self.opts["cmn"] = _choice("Wave cmn", cmn, _CMN)
        if cvn is not None:
            self.opts["cvn"] = int(bool(cvn))
        self.names = {}
        for k, v in (("noise", noise), ("rir", rir)):
            if v is not None:
                b = str(v).encode()
                if not 0 < len(b) < lib.FEEDER_DATASET_MAX:
                    raise OptionError("Wave %s: a dataset name of 1 to %d bytes, not %r"
                                      % (k, lib.FEEDER_DATASET_MAX - 1, v))
                self.names[k] = b

    def fill(self, o) -> None:
        """Write these options into a struct feeder_stream_opts (cdata)."""
        o.pipeline = lib.FEEDER_PIPE_WAVE
        w = o.wave
        for k, v in self.opts.items():
            setattr(w, k, v)
        for k, b in self.names.items():
            setattr(w, k, b)
        w.train = int(self.train)

    def __repr__(self) -> str:
        return "Wave(train=%r, %s)" % (self.train, ", ".join(
            "%s=%r" % kv for kv in sorted(list(self.opts.items()) + list(self.names.items()))))


PipelineLike = Union["Jpeg", "Features", "Wave", str]


def as_pipeline(p: PipelineLike) -> Union["Jpeg", "Features", "Wave"]:
    """A Jpeg, Features or Wave from what the Loader was given."""
    if isinstance(p, (Jpeg, Features, Wave)):
        return p
    if isinstance(p, str):
        # the names of enum feeder_pipeline, each with its class's defaults
        kinds = enum_choices("enum feeder_pipeline", "FEEDER_PIPE_")
        classes = {lib.FEEDER_PIPE_JPEG: Jpeg, lib.FEEDER_PIPE_FEATURES: Features,
                   lib.FEEDER_PIPE_WAVE: Wave}
        code = kinds.get(p.lower())
        if code in classes:
            return classes[code]()
    raise OptionError("pipeline must be feeder.Jpeg(...), feeder.Features(...), "
                      "feeder.Wave(...), 'jpeg', 'features' or 'wave', not %r" % (p,))
