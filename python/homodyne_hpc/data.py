"""Two-time correlation data as numpy arrays: loaded from an APS file by a config's
selection rules (:func:`load_data`) or by explicit arguments (:func:`load_aps`)."""
from dataclasses import dataclass, field

import numpy as np

from . import _core
from ._config import config_source


@dataclass
class Data:
    """c2 of one q-ring: ``c2[k]`` is angle k's full N×N matrix (symmetric, diagonal
    corrected as homodyne does), frames ``dt`` apart."""
    c2: np.ndarray  # (angles, N, N)
    phi_deg: np.ndarray  # (angles,)
    q: float  # 1/Å
    dt: float  # s
    source: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def n_frames(self):
        return int(self.c2.shape[1])

    @property
    def t(self):
        """Frame times from 0 [s] (the loader's grid)."""
        return self.dt * np.arange(self.n_frames)

    def to_dict(self):
        return {"c2": self.c2, "phi_deg": self.phi_deg, "q": self.q, "dt": self.dt,
                "source": self.source, "n_frames": self.n_frames, "metadata": dict(self.metadata)}


def _from_dict(d, **metadata):
    meta = {"source": d["source"], "q": d["q"], "dt": d["dt"], "n_frames": d["n_frames"],
            "n_angles": int(d["c2"].shape[0])}
    meta.update(metadata)
    return Data(c2=d["c2"], phi_deg=d["phi_deg"], q=d["q"], dt=d["dt"], source=d["source"],
                metadata=meta)


def load_data(config, data_file=None, strict=False):
    """The matrices a config selects (experimental_data, analyzer_parameters, phi_filtering),
    as ``homodyne --config`` reads them. ``config``: a YAML path or a dict; ``data_file``
    replaces the config's file (``--data-file``)."""
    file, text = config_source(config)
    d = _core._load_config_data(file, text, data_file or "", strict)
    return _from_dict(d, analysis_mode=d["analysis_mode"], config=file)


def load_aps(file, dt, q=0.0054, start_frame=1, end_frame=-1, phi_ranges=(),
             q_tolerance_fraction=0.1):
    """One q-ring of an APS file (aps_old or aps_u layout): the ring nearest ``q``, frames
    ``start_frame..end_frame`` (1-based, inclusive; -1: the last), the angles inside any of
    ``phi_ranges`` [(min, max) in degrees] (empty: all)."""
    d = _core._load_aps(str(file), q, dt, start_frame, end_frame, q_tolerance_fraction,
                        [tuple(map(float, r)) for r in phi_ranges])
    return _from_dict(d, start_frame=start_frame, end_frame=end_frame)
