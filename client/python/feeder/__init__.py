"""feeder — Python client of feederd: decoded, augmented training batches
straight from the daemon's shared memory into NumPy or PyTorch.

    import feeder
    loader = feeder.Loader("imagenet", 256, pipeline=feeder.Jpeg(224), shuffle=True,
                           as_torch=True)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:
            ...

The package is pure Python over libfeeder (client/feeder.h) through cffi in
ABI mode, so it needs no build per Python version; see _lib.py for how the
library is found. Loader is in loader.py, the exceptions in errors.py, the
pipeline descriptions in pipelines.py.
"""
from ._lib import library_path
from .errors import (DaemonConnectionError, DaemonTimeoutError, DatasetError, FeederError,
                     OptionError, ProtocolError, strerror)
from .loader import Loader
from .pipelines import Features, Jpeg, Wave

__version__ = "0.1.0"
__all__ = ["Loader", "Jpeg", "Features", "Wave", "FeederError", "DaemonConnectionError",
           "DaemonTimeoutError", "DatasetError", "ProtocolError", "OptionError", "strerror",
           "library_path"]
