"""errors.py — the exceptions of the feeder package.

libfeeder reports failures as negative codes plus a sentence (for refusals,
the daemon's own); this module turns such a pair into a Python exception whose
class says what kind of trouble it is, so that a trainer can catch "the daemon
is gone" separately from "that dataset does not exist":

    FeederError                      every failure; .code, .message
      DaemonConnectionError          no daemon, refused, gone mid-epoch
                                     (also a builtin ConnectionError)
        DaemonTimeoutError           nothing arrived in time (also TimeoutError)
      DatasetError                   no such dataset, bad name, corrupt data,
                                     a stream that failed on a bad sample
      ProtocolError                  malformed message, version mismatch
      OptionError                    an option out of range (also ValueError),
                                     from the daemon or checked here first
"""
import errno as _errno
from typing import Any

from ._lib import ffi, lib


class FeederError(Exception):
    """A failure of libfeeder or of the daemon. .code is libfeeder's negative
    code (a negated errno or a FEEDER_E* value, 0 for checks made in Python)
    and .message the sentence explaining it."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class DaemonConnectionError(FeederError, ConnectionError):
    """No daemon at the socket, access refused, or the daemon went away."""


class DaemonTimeoutError(DaemonConnectionError, TimeoutError):
    """The daemon did not answer within the configured timeout."""


class DatasetError(FeederError):
    """The dataset is missing, misnamed or corrupt, or its stream failed."""


class ProtocolError(FeederError):
    """The daemon sent something malformed or speaks another version."""


class OptionError(FeederError, ValueError):
    """An option is out of range or of the wrong kind."""


_CLASS_OF = {
    lib.FEEDER_ETIMEDOUT: DaemonTimeoutError,
    lib.FEEDER_ECLOSED: DaemonConnectionError,
    lib.FEEDER_EDENIED: DaemonConnectionError,
    lib.FEEDER_EPROTO: ProtocolError,
    lib.FEEDER_EVERSION: ProtocolError,
    lib.FEEDER_ENODATASET: DatasetError,
    lib.FEEDER_EBADNAME: DatasetError,
    lib.FEEDER_ECORRUPT: DatasetError,
    lib.FEEDER_EFORMAT: DatasetError,
    lib.FEEDER_EDECODE: DatasetError,
    lib.FEEDER_ESTREAM: DatasetError,
    lib.FEEDER_EINVAL: OptionError,
    lib.FEEDER_EQUOTA: OptionError,
    -_errno.EINVAL: OptionError,
}
for _e in (_errno.ENOENT, _errno.ECONNREFUSED, _errno.EACCES, _errno.ECONNRESET,
           _errno.EPIPE, _errno.ENOTCONN, _errno.ENOTSOCK):
    _CLASS_OF[-_e] = DaemonConnectionError


def strerror(code: int) -> str:
    """libfeeder's short phrase for a code."""
    return ffi.string(lib.feeder_strerror(code)).decode("utf-8", "replace")


def error_from(code: int, sentence: str) -> FeederError:
    """The exception for a libfeeder code and its sentence (which may be "")."""
    sentence = sentence or strerror(code)
    return _CLASS_OF.get(code, FeederError)(sentence, code)


def last_error(conn: Any) -> str:
    """feeder_last_error(conn) as str (conn may be ffi.NULL)."""
    return ffi.string(lib.feeder_last_error(conn)).decode("utf-8", "replace")
