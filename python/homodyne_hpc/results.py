"""Typed fit results (:class:`NlsqResult`, :class:`CmcResult`) and the reader of a results
directory that ``homodyne`` wrote (:func:`read_results`)."""
import json
import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class NlsqResult:
    """An NLSQ answer. ``status`` is "converged" only when the optimality test holds
    ("stalled", "max_iter", "failed" otherwise: not a minimum); ``quality`` judges the fit
    against the data's noise."""
    status: str
    parameters: dict  # name -> {"value", "uncertainty", "held"}
    phi_deg: np.ndarray
    contrast: np.ndarray
    offset: np.ndarray
    chi2: float
    reduced_chi2: float
    noise_reduced_chi2: float
    quality: str
    iterations: int
    info: dict = field(default_factory=dict)  # everything else of the summary
    _summary: object = field(default=None, repr=False, compare=False)

    @classmethod
    def from_summary(cls, summary):
        d = summary.to_dict()
        main = {"status", "parameters", "phi_deg", "contrast", "offset", "chi2", "reduced_chi2",
                "noise_reduced_chi2", "quality", "iterations"}
        return cls(status=d["status"], parameters=d["parameters"],
                   phi_deg=np.asarray(d["phi_deg"]), contrast=np.asarray(d["contrast"]),
                   offset=np.asarray(d["offset"]), chi2=d["chi2"],
                   reduced_chi2=d["reduced_chi2"], noise_reduced_chi2=d["noise_reduced_chi2"],
                   quality=d["quality"], iterations=d["iterations"],
                   info={k: v for k, v in d.items() if k not in main}, _summary=summary)

    @property
    def converged(self):
        return self.status == "converged"

    def values(self):
        """{name: value} of the physical parameters."""
        return {k: v["value"] for k, v in self.parameters.items()}

    def report(self):
        return self.info.get("report", "")

    def to_dict(self):
        d = {"method": "nlsq", "status": self.status, "parameters": self.parameters,
             "phi_deg": self.phi_deg.tolist(), "contrast": self.contrast.tolist(),
             "offset": self.offset.tolist(), "chi2": self.chi2,
             "reduced_chi2": self.reduced_chi2, "noise_reduced_chi2": self.noise_reduced_chi2,
             "quality": self.quality, "iterations": self.iterations}
        d.update({k: v for k, v in self.info.items() if k != "method"})
        return d


@dataclass
class CmcResult:
    """A CMC posterior summary. ``status``: "converged" (every shard's R-hat below 1.1),
    "not_converged" or "unchecked" (one chain: no convergence claim)."""
    status: str
    parameters: dict  # name -> {"mean", "std", "held"}
    phi_deg: np.ndarray
    contrast: np.ndarray
    offset: np.ndarray
    max_rhat: float
    min_ess: float
    shards: list
    info: dict = field(default_factory=dict)
    nlsq: object = None  # the NLSQ warm start (NlsqResult) when there was one

    @classmethod
    def from_dict(cls, d, nlsq=None):
        main = {"status", "parameters", "phi_deg", "contrast", "offset", "max_rhat", "min_ess",
                "shards"}
        return cls(status=d["status"], parameters=d["parameters"],
                   phi_deg=np.asarray(d["phi_deg"]), contrast=np.asarray(d["contrast"]),
                   offset=np.asarray(d["offset"]), max_rhat=d["max_rhat"],
                   min_ess=d["min_ess"], shards=d["shards"],
                   info={k: v for k, v in d.items() if k not in main}, nlsq=nlsq)

    def report(self):
        return self.info.get("report", "")

    def to_dict(self):
        d = {"method": "cmc", "status": self.status, "parameters": self.parameters,
             "phi_deg": self.phi_deg.tolist(), "contrast": self.contrast.tolist(),
             "offset": self.offset.tolist(), "max_rhat": self.max_rhat,
             "min_ess": self.min_ess, "shards": self.shards}
        d.update({k: v for k, v in self.info.items() if k != "method"})
        if self.nlsq is not None:
            d["nlsq"] = self.nlsq.to_dict()
        return d


def _read_h5(path):
    import h5py  # python3-h5py
    out = {}
    with h5py.File(path, "r") as f:
        out["attrs"] = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def _read_file(path):
    if path.endswith(".json"):
        with open(path) as f:
            return json.load(f)
    if path.endswith(".yaml"):
        import yaml
        with open(path) as f:
            return yaml.safe_load(f)
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    if path.endswith(".h5"):
        return _read_h5(path)
    return None


def read_results(directory, arrays=True):
    """Every result file of a ``homodyne`` output directory, as nested dicts keyed by the
    relative path: ``r["nlsq/parameters.json"]`` (JSON and YAML as dicts), HDF5 files
    (``nlsq/fitted_data.h5``, ``cmc/samples.h5``) as {dataset path: numpy array, "attrs":
    ...}, .npz files as {name: array}. ``arrays=False`` skips the HDF5 and .npz files."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise FileNotFoundError("%s: not a results directory" % directory)
    out = {}
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if not arrays and name.endswith((".h5", ".npz")):
                continue
            value = _read_file(path)
            if value is not None:
                out[os.path.relpath(path, directory)] = value
    return out
