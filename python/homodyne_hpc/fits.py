"""NLSQ and CMC fits, on arrays in memory or on a config, collective over MPI."""
import numpy as np

from . import _core
from ._config import config_source
from .data import Data
from .results import CmcResult, NlsqResult

_CONFIG_KEYS = {"data_file", "initial", "threads", "print_progress", "strict", "stop_directory"}


def _arrays(data):
    if isinstance(data, Data):
        return data.c2, data.phi_deg, data.q, data.dt, data.source or "python arrays"
    if isinstance(data, dict):
        return (data["c2"], data["phi_deg"], data["q"], data["dt"],
                data.get("source", "python arrays"))
    raise TypeError("data: expected a homodyne_hpc.Data or a dict with c2, phi_deg, q, dt")


def _config_call(fn, config, comm, kwargs):
    unknown = set(kwargs) - _CONFIG_KEYS
    if unknown:
        raise TypeError("fit on a config: unknown keyword(s) %s (allowed: %s)"
                        % (sorted(unknown), sorted(_CONFIG_KEYS)))
    file, text = config_source(config)
    return fn(file, text, kwargs.get("data_file") or "", bool(kwargs.get("strict", False)),
              {k: float(v) for k, v in (kwargs.get("initial") or {}).items()},
              int(kwargs.get("threads", 1)), bool(kwargs.get("print_progress", False)),
              kwargs.get("stop_directory", ""), comm)


def fit_nlsq(data=None, *, config=None, comm=None, options=None, **kwargs):
    """A bounded least-squares fit of the homodyne model; returns an :class:`NlsqResult`.

    On arrays: ``data`` is a :class:`Data` (or a dict with c2, phi_deg, q, dt) and the
    options are homodyne::NlsqOptions' fields, as keywords or an ``options`` dict: mode,
    parameters ({name: initial} or {name: {initial, min, max, fixed}}; "contrast" and
    "offset" for the per-angle scaling), per_angle, max_iterations, ftol, xtol, gtol,
    threads, print_progress, restarts_on_stall, phi0_restarts, stator_rotor_gap.

    On a config: ``config`` is a YAML path or a dict and the fit is the one
    ``homodyne --config`` runs (the same numbers); keywords data_file, initial ({name:
    value}, the CLI's --initial-NAME), threads, print_progress, strict.

    Collective over ``comm`` (an mpi4py communicator; None: MPI_COMM_WORLD, MPI started on
    first use). The GIL is released while it runs; Ctrl-C (SIGINT) ends it at the next
    safe point and raises KeyboardInterrupt.
    """
    if config is not None:
        if data is not None or options:
            raise TypeError("fit_nlsq: give either data (with options) or config, not both")
        return NlsqResult.from_summary(_config_call(_core._fit_nlsq_config, config, comm, kwargs))
    if data is None:
        raise TypeError("fit_nlsq: give data (a homodyne_hpc.Data) or config")
    opts = dict(options or {})
    opts.update(kwargs)
    c2, phi, q, dt, source = _arrays(data)
    summary = _core._fit_nlsq_arrays(c2, np.asarray(phi, dtype=float), float(q), float(dt),
                                     source, opts, comm)
    return NlsqResult.from_summary(summary)


def fit_cmc(data=None, *, config=None, comm=None, options=None, **kwargs):
    """Consensus Monte Carlo sampling of the posterior; returns a :class:`CmcResult`.

    On arrays: the options are homodyne::CmcOptions' fields (mode, parameters, per_angle,
    shards, chains, warmup, draws, seed, target_accept, max_tree_depth, known_sigma,
    threads, print_progress, nlsq_informed_priors, stator_rotor_gap) and ``warm_start``, an
    :class:`NlsqResult` of the same data and mode whose answer starts the chains.

    On a config: ``homodyne --method cmc --config`` (its NLSQ fit as the warm start, then the
    sampling of optimization.cmc); the result's ``nlsq`` holds that fit.
    """
    if config is not None:
        if data is not None or options:
            raise TypeError("fit_cmc: give either data (with options) or config, not both")
        d, warm = _config_call(_core._fit_cmc_config, config, comm, kwargs)
        return CmcResult.from_dict(d, nlsq=NlsqResult.from_summary(warm))
    if data is None:
        raise TypeError("fit_cmc: give data (a homodyne_hpc.Data) or config")
    opts = dict(options or {})
    opts.update(kwargs)
    warm = opts.get("warm_start")
    if isinstance(warm, NlsqResult):
        opts["warm_start"] = warm._summary
    c2, phi, q, dt, source = _arrays(data)
    d = _core._fit_cmc_arrays(c2, np.asarray(phi, dtype=float), float(q), float(dt), source,
                              opts, comm)
    return CmcResult.from_dict(d, nlsq=warm if isinstance(warm, NlsqResult) else None)
