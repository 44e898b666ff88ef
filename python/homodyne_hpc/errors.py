"""The library's errors as Python exceptions.

Every failure of the C++ library is a ``homodyne::Error`` with a kind; each kind becomes a
subclass of :class:`Error`, which also derives from the built-in exception of the same
meaning (bad input is a ``ValueError``, a file problem an ``OSError``, ...), so code that
catches either works. Config and data-file problems are bad input (or file errors) whose
``file`` and ``key`` name the config file and key or the data file and HDF5 dataset.
"""


class Error(Exception):
    """An error of the homodyne library: ``str(e)`` is its full message."""

    def __init__(self, text, kind="internal error", message=None, file="", key="", rank=-1):
        super().__init__(text)
        self.kind = kind  # "bad input", "I/O error", "numerical failure", ...
        self.message = text if message is None else message  # without the context
        self.file = file  # the input file involved ("" if none)
        self.key = key  # the config key, HDF5 dataset or option ("" if none)
        self.rank = rank  # the MPI rank that raised it (-1: not known or not relevant)


class BadInputError(Error, ValueError):
    """A config, option, array or data file violates a documented rule."""


class FileError(Error, OSError):
    """A file could not be read or written."""


class NumericalError(Error, ArithmeticError):
    """The computation failed (NaN, a failure that cannot be reported as a result)."""


class InternalError(Error, RuntimeError):
    """A broken invariant of the library: a bug."""


class StoppedError(Error):
    """A run ended at a stop request (RequestStop) before its answer."""
