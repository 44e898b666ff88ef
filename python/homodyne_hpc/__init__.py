"""homodyne-hpc from Python: the homodyne model, APS data, distributed NLSQ and CMC fits.

numpy in, numpy out; the fits are the C++ library's (the same numbers the ``homodyne``
command writes), collective over MPI when the process runs under ``mpiexec`` (pass an
mpi4py communicator as ``comm``). docs/python.md is the guide.
"""
from . import _core
from ._core import __version__, model_jacobian, parameter_names
from .model import model_c2
from .errors import (BadInputError, Error, FileError, InternalError, NumericalError,
                     StoppedError)
from .data import Data, load_aps, load_data
from .fits import fit_cmc, fit_nlsq
from .results import CmcResult, NlsqResult, read_results

__all__ = [
    "__version__", "model_c2", "model_jacobian", "parameter_names", "Error", "BadInputError",
    "FileError", "NumericalError", "InternalError", "StoppedError", "Data", "load_aps",
    "load_data", "fit_nlsq", "fit_cmc", "NlsqResult", "CmcResult", "read_results",
]
