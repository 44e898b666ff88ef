"""Refits a two_component run's residual vector with SciPy least_squares and compares parameters.

Usage: two_component_loss_check.py <run output dir> <loss> <f_scale> <dt>
       two_component_loss_check.py --self-check

The model is written here in numpy from the heterodyne spec (section 2) as docs/model.md
states it ("Two-component model"). Every invocation first checks it against the six cases of
tests/data/reference_heterodyne.json (every c2 value within 1e-12), so a wrong model here
cannot pass for a wrong fit.

Reads the data (c2_exp), the time grid (t1: dt*[1..N], the model's grid for two_component)
and q from the run's nlsq/fitted_data.h5, and the answer (all 14 physical parameters, the
held ones included, and the per-angle contrast/offset) from nlsq/parameters.json. The fit
uses the pairs i < j of frames 1..N-1 of every angle, each counted twice, with sigma = 0.01
and homodyne's unscaled residual d = c2_exp - c2 (f_scale in c2 units). Checks:
  1. the plain chi2 at the run's answer, sum 2 (d/sigma)^2, equals the run's chi_squared
     (1e-9 relative): the model, data and points are the run's;
  2. the run's objective_value equals (f/sigma)^2 * sum 2 rho((d/f)^2) (the plain chi2 for
     the linear loss);
  3. SciPy least_squares(d, loss, f_scale) over the run's free parameters (the physical ones
     that vary and every contrast/offset), inside the bounds the run reports, from a start
     0.3 % away, converges to the run's answer: every free parameter within 1e-6 relative or
     1e-3 of its uncertainty.
"""
import json
import os
import sys

import h5py
import numpy as np
from scipy.optimize import least_squares

from loss_check_common import check_chi2_and_objective, compare_with_scipy, rho

NAMES = ["D0_ref", "alpha_ref", "D_offset_ref", "D0_sample", "alpha_sample", "D_offset_sample",
         "v0", "v_beta", "v_offset", "f0", "f1", "f2", "f3", "phi0_het"]


def power(t, e):
    b = np.where(t > 1e-10, t, 1e-10)
    return np.where(t > 0, b ** e, 0.0)


def prefix(f, dt):
    """P[0] = 0, P[m] = dt * sum_{r<m} (f[r] + f[r+1]) / 2 (running sum first, then dt)."""
    p = np.zeros_like(f)
    p[1:] = np.cumsum((f[:-1] + f[1:]) / 2)
    return dt * p


def softplus(z):
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


class Model:
    """c2 of the two-component model on a time grid t for the index pairs (i, j)."""

    def __init__(self, t, dt, q, phi_deg, i, j):
        self.t, self.dt, self.q = np.asarray(t, float), float(dt), float(q)
        self.phi = np.asarray(phi_deg, float)
        self.i, self.j = i, j

    def g2(self, p):
        """(R + S + X) / n per angle (rows) and pair (columns), and the normalisation."""
        t, dt, q, i, j = self.t, self.dt, self.q, self.i, self.j
        j_r = np.maximum(p[0] * power(t, p[1]) + p[2], 0.0)
        j_s = np.maximum(p[3] * power(t, p[4]) + p[5], 0.0)
        v = p[6] * power(t, p[7]) + p[8]
        p_r, p_s, p_v = prefix(j_r, dt), prefix(j_s, dt), prefix(v, dt)
        i_r = np.sqrt((p_r[j] - p_r[i]) ** 2 + 1e-12)
        i_s = np.sqrt((p_s[j] - p_s[i]) ** 2 + 1e-12)
        h_r = np.exp(np.clip(-0.5 * q * q * i_r, -700.0, 0.0))
        h_s = np.exp(np.clip(-0.5 * q * q * i_s, -700.0, 0.0))
        x = p[9] * np.exp(np.clip(p[10] * (t - p[11]), -700.0, 700.0)) + p[12]
        y = softplus(50.0 * x) / 50.0
        f_s = 1.0 - softplus(50.0 * (1.0 - y)) / 50.0
        f_r = 1.0 - f_s
        rr = (f_r[i] * f_r[j]) ** 2 * h_r ** 2
        ss = (f_s[i] * f_s[j]) ** 2 * h_s ** 2
        fx = f_r * f_s
        n = (f_s[i] ** 2 + f_r[i] ** 2) * (f_s[j] ** 2 + f_r[j] ** 2)
        n = np.where(n > 1e-10, n, 1e-10)
        out = []
        for phi in self.phi:
            theta = q * np.cos((phi + p[13]) * np.pi / 180.0) * (p_v[j] - p_v[i])
            xx = 2.0 * (fx[i] * fx[j]) * h_r * h_s * np.cos(theta)
            out.append(rr + ss + xx)
        return np.stack(out), n

    def c2(self, p, contrast, offset):
        s, n = self.g2(p)
        return (np.asarray(offset, float)[:, None] +
                (np.asarray(contrast, float)[:, None] * s) / n)


def self_check():
    here = os.path.dirname(os.path.abspath(__file__))
    ref = json.load(open(os.path.join(here, "..", "data", "reference_heterodyne.json")))
    worst = 0.0
    for case in ref["cases"]:
        assert case["param_names"] == NAMES, case["param_names"]
        nf = case["frames"]
        i, j = np.indices((nf, nf))
        m = Model(case["t"], case["dt"], case["q"], case["phi_deg"], i.ravel(), j.ravel())
        c2 = m.c2(np.asarray(case["params"], float), case["contrast"], case["offset"])
        want = np.asarray(case["c2"], float).reshape(len(case["phi_deg"]), nf * nf)
        err = np.max(np.abs(c2 - want))
        assert err <= 1e-12, (case["name"], err)
        worst = max(worst, err)
    print(f"numpy two_component model: {len(ref['cases'])} reference cases, worst {worst:.1e}")


def report_bounds(path):
    """parameter_space.bounds of the run's report (the effective config): name -> (min, max)."""
    bounds, name, inside = {}, None, False
    for line in open(path):
        text = line.strip()
        if text == "parameter_space:":
            inside = True
        elif inside and text.startswith("priors:"):
            break
        elif inside and text.startswith("- name:"):
            name = text.split(":", 1)[1].strip()
            bounds[name] = [None, None]
        elif inside and name and text.startswith(("min:", "max:")):
            bounds[name][text.startswith("max:")] = float(text.split(":", 1)[1])
    return {k: tuple(v) for k, v in bounds.items()}


def main():
    self_check()
    if sys.argv[1:] == ["--self-check"]:
        return
    out, loss, f_scale, dt = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])

    with h5py.File(out + "/nlsq/fitted_data.h5", "r") as f:
        c2_exp = np.asarray(f["c2_exp"], dtype=float)
        t_model = np.asarray(f["t1"], dtype=float)  # dt*[1..N], the two_component grid
        q = float(np.asarray(f["q"]).ravel()[0])
    p = json.load(open(out + "/nlsq/parameters.json"))
    res = json.load(open(out + "/nlsq/analysis_results_nlsq.json"))
    pa = p["per_angle"]
    phi = np.asarray(pa["phi_angles_deg"], dtype=float)
    n_phi = len(phi)
    layout = pa["per_angle_mode"]
    if "averaged" in layout:
        n_scale = 1
    elif "individual" in layout:
        n_scale = n_phi
    else:
        raise SystemExit(f"per-angle layout {layout}: only averaged and individual are checked")

    # The answer: all 14 physical parameters (held ones at their values) and the scaling.
    phys = np.array([p["parameters"][k]["value"] for k in NAMES])
    free = [k for k in NAMES if p["parameters"][k]["vary"]]
    free_idx = np.array([NAMES.index(k) for k in free])
    contrast = np.array([c["value"] for c in pa["contrast"]])
    offset = np.array([o["value"] for o in pa["offset"]])
    if n_scale == 1:
        assert np.all(contrast == contrast[0]) and np.all(offset == offset[0]), pa
    x_run = np.concatenate([phys[free_idx], contrast[:n_scale], offset[:n_scale]])
    sd_run = np.array([p["parameters"][k]["uncertainty"] for k in free] +
                      [c["uncertainty"] for c in pa["contrast"][:n_scale]] +
                      [o["uncertainty"] for o in pa["offset"][:n_scale]])
    names = free + ([f"contrast_{k}" for k in range(n_scale)] +
                    [f"offset_{k}" for k in range(n_scale)] if n_scale > 1 else
                    ["contrast", "offset"])

    # The bounds the run used: parameter_space.bounds of its effective config; for the
    # individual layout a contrast bound equal to the registry's [0, 1] becomes xpcsjax's
    # [0.1, 0.8] (docs/model.md, "Per-angle scaling as xpcsjax's").
    rb = report_bounds(out + "/run_report.yaml")
    c_lo, c_hi = rb["contrast"]
    if n_scale > 1 and (c_lo, c_hi) == (0.0, 1.0):
        c_lo, c_hi = 0.1, 0.8
    lower = np.array([rb[k][0] for k in free] + [c_lo] * n_scale + [rb["offset"][0]] * n_scale)
    upper = np.array([rb[k][1] for k in free] + [c_hi] * n_scale + [rb["offset"][1]] * n_scale)
    assert np.all((lower <= x_run) & (x_run <= upper)), ("answer outside the bounds", x_run)

    # The fit's points: frames 1..N-1 (the model's t = 2dt ...), pairs i < j, twice each.
    t = t_model[1:]
    n = len(t)
    iu, ju = np.triu_indices(n, 1)
    data = np.stack([c2_exp[k][1:, 1:][iu, ju] for k in range(n_phi)])
    model = Model(t, dt, q, phi, iu, ju)

    def unpack(x):
        full = phys.copy()
        full[free_idx] = x[:len(free)]
        c = x[len(free):len(free) + n_scale]
        o = x[len(free) + n_scale:]
        return full, np.broadcast_to(c, (n_phi,)), np.broadcast_to(o, (n_phi,))

    def residuals(x):  # homodyne's residual vector: unscaled
        return (data - model.c2(*unpack(x))).ravel()

    d = residuals(x_run)
    assert res["fit_quality"]["chi_squared"] == p["chi_squared"], p["chi_squared"]
    check_chi2_and_objective(res, d, loss, f_scale)

    # Scaled for SciPy (D0 ~ 1e4 next to fractions ~ 0.3); the start 0.3 % away, inside.
    scale = np.where(np.abs(x_run) > 0, np.abs(x_run), 1.0)
    start = np.clip(x_run * 1.003, lower, upper)
    fit = least_squares(lambda u: residuals(u * scale), start / scale, jac="3-point", loss=loss,
                        f_scale=f_scale, bounds=(lower / scale, upper / scale), method="trf",
                        x_scale="jac", ftol=None, xtol=1e-15, gtol=1e-15, max_nfev=2000)
    x_sp = fit.x * scale
    worst, bad = compare_with_scipy(names, x_run, x_sp, sd_run)
    ours = 0.5 * f_scale ** 2 * np.sum(rho(loss, (d / f_scale) ** 2))
    at_bound = [k for k, a, lo, hi in zip(names, x_sp, lower, upper) if a <= lo or a >= hi]
    print(f"two_component {loss} f_scale {f_scale} ({layout}, {len(x_run)} free): scipy status "
          f"{fit.status} nfev {fit.nfev}; worst {worst:.2e}; cost ours {ours:.15e} scipy "
          f"{fit.cost:.15e}; at a bound {at_bound or 'none'}; "
          f"status {res['optimization_summary']['convergence_status']}")
    assert not bad, bad


if __name__ == "__main__":
    main()
