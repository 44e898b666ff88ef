#!/usr/bin/python3
"""The χ² of the Python peers' own objective at given parameters.

    peer_objective.py PEERS_DIR CONFIG ANSWERS.json

ANSWERS.json: {"label": {"contrast": [...], "offset": [...], "params": {name: value}}, ...}.
Prints {"label": chi2, ...} as one JSON line: scipy_fd.py's NumPy model and data path
(peers_common.py, homodyne's loader semantics, χ² = 2·Σ upper-triangle residuals²),
evaluated once at each answer. The whole-job benchmark uses it to check that homodyne-hpc's
χ² is the peers' χ² of the same point, so that the χ² columns compare one objective.
"""
import json
import os
import sys


def main():
    peers_dir, config, answers_path = sys.argv[1:4]
    sys.path.insert(0, peers_dir)
    sys.argv = [sys.argv[0], "--threads", "1"]  # the peers read their thread count at import
    import numpy as np
    import peers_common as pc
    import scipy_fd

    cfg = pc.load_config(config)
    prob = pc.load_problem(cfg)
    model = scipy_fd.build(cfg, prob)
    _, phys, _, _ = pc.param_layout(cfg, model.n_phi)
    out = {}
    with open(answers_path) as f:
        answers = json.load(f)
    for label, a in answers.items():
        x = np.array(list(a["contrast"]) + list(a["offset"]) + [a["params"][n] for n in phys])
        r = model.residuals(x)
        out[label] = float(model.chi2_factor * np.dot(r, r))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
