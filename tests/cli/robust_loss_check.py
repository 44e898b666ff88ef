"""Refits a homodyne run's residual vector with SciPy least_squares and compares parameters.

Usage: robust_loss_check.py <run output dir> <mode> <loss> <f_scale> <dt> <gap> [--no-refit]

Reads the data (c2_exp) and the time grid from the run's nlsq/fitted_data.h5 and the answer
from nlsq/parameters.json; rebuilds the model of docs/model.md ("Formulas as implemented")
on the fit grid (t = 0 excluded; pairs i < j of every angle) and checks, with homodyne's
residual vector d = c2_exp - c2 (unscaled, f_scale in c2 units) and sigma = 0.01:
  1. the plain chi2 at the run's answer, sum 2 (d/sigma)^2, equals the run's chi_squared
     (each pair counted twice, as the run counts it): the model, data and points are the run's;
  2. under a robust loss, the run's objective_value equals (f/sigma)^2 * sum 2 rho((d/f)^2);
  3. SciPy least_squares(d, loss, f_scale) from a start 0.3 % away (arctan is flat far out)
     converges to the run's
     answer: every parameter within 1e-6 relative or 1e-3 of its uncertainty (not with
     --no-refit).
"""
import json
import sys

import h5py
import numpy as np
from scipy.optimize import least_squares

from loss_check_common import check_chi2_and_objective, compare_with_scipy, rho

out, mode, loss, f_scale = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
dt, gap = float(sys.argv[5]), float(sys.argv[6])
refit = "--no-refit" not in sys.argv[7:]
laminar = mode == "laminar_flow"

with h5py.File(out + "/nlsq/fitted_data.h5", "r") as f:
    c2_exp = np.asarray(f["c2_exp"], dtype=float)
    t_full = np.asarray(f["t1"], dtype=float)
    q = float(np.asarray(f["q"]).ravel()[0])
if t_full.ndim == 2:
    t_full = t_full[:, 0] if np.ptp(t_full[:, 0]) > 0 else t_full[0, :]
p = json.load(open(out + "/nlsq/parameters.json"))
phys_names = ["D0", "alpha", "D_offset"]
if laminar:
    phys_names += ["gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]
pa = p["per_angle"]
phi = np.asarray(pa["phi_angles_deg"], dtype=float)
n_phi = len(phi)
x_run = np.array([c["value"] for c in pa["contrast"]] + [o["value"] for o in pa["offset"]] +
                 [p["parameters"][n]["value"] for n in phys_names])
sd_run = np.array([c["uncertainty"] for c in pa["contrast"]] +
                  [o["uncertainty"] for o in pa["offset"]] +
                  [p["parameters"][n]["uncertainty"] for n in phys_names])

t = t_full[1:]  # the fit grid
n = len(t)
iu, ju = np.triu_indices(n, 1)
data = np.stack([c2_exp[k][1:, 1:][iu, ju] for k in range(n_phi)])


def cumtrap(f):
    c = np.zeros_like(f)
    c[1:] = np.cumsum(0.5 * (f[:-1] + f[1:]))
    return c


def model(x):
    contrast, offset, th = x[:n_phi], x[n_phi:2 * n_phi], x[2 * n_phi:]
    eps = 0.5 * abs(t[min(1, n - 1)] - t[0])
    eps = eps if eps > 1e-8 else 1e-8
    ts = np.where(t > eps, t, eps)
    d = th[0] * ts ** th[1] + th[2]
    d = np.where(d > 1e-10, d, 1e-10)
    cd = cumtrap(d)
    i_d = np.sqrt((cd[iu] - cd[ju]) ** 2 + 1e-12)
    g1d = np.exp(np.clip(-0.5 * q * q * dt * i_d, -700.0, 0.0))
    out = []
    for k in range(n_phi):
        s = 1.0
        if laminar:
            gam = th[3] * ts ** th[4] + th[5]
            gam = np.where(gam > 1e-10, gam, 1e-10)
            cg = cumtrap(gam)
            i_g = np.sqrt((cg[iu] - cg[ju]) ** 2 + 1e-12)
            sp = 0.5 / np.pi * q * gap * dt
            xx = sp * np.cos(np.pi / 180.0 * (th[6] - phi[k])) * i_g
            small = np.abs(xx) < 1e-4
            sinc = np.where(small, 1 - xx ** 2 / 6 + xx ** 4 / 120,
                            np.sin(xx) / np.where(small, 1.0, xx))
            s = sinc ** 2
        g1 = g1d * s
        g1 = np.where(g1 > 1e-10, g1, 1e-10)
        out.append(offset[k] + contrast[k] * g1 ** 2)
    return np.stack(out)


def residuals(x):  # homodyne's residual vector: unscaled
    return (data - model(x)).ravel()


res = json.load(open(out + "/nlsq/analysis_results_nlsq.json"))
d = residuals(x_run)
check_chi2_and_objective(res, d, loss, f_scale)
if not refit:
    print(f"{mode} {loss}: chi2 and objective are the run's")
    sys.exit(0)

# Scale the parameters for SciPy (D0 ~ 1e4 next to shear rates ~ 1e-3).
scale = np.where(np.abs(x_run) > 0, np.abs(x_run), 1.0)
start = x_run * 1.003
fit = least_squares(lambda u: residuals(u * scale), start / scale, jac="3-point", loss=loss,
                    f_scale=f_scale,
                    method="trf", x_scale="jac", ftol=None, xtol=1e-15, gtol=1e-15,
                    max_nfev=2000)
x_sp = fit.x * scale
names = [f"contrast_{k}" for k in range(n_phi)] + [f"offset_{k}" for k in range(n_phi)] + phys_names
worst, bad = compare_with_scipy(names, x_run, x_sp, sd_run)
ours = 0.5 * f_scale ** 2 * np.sum(rho(loss, (d / f_scale) ** 2))
print(f"{mode} {loss} f_scale {f_scale}: scipy status {fit.status} nfev {fit.nfev}; worst "
      f"{worst:.2e}; cost ours {ours:.15e} scipy {fit.cost:.15e}; "
      f"status {res['optimization_summary']['convergence_status']}")
assert not bad, bad
# The robust answer differs from the plain least-squares one on data with outliers.
if loss != "linear":
    plain = least_squares(lambda u: residuals(u * scale), x_run / scale, method="trf",
                          x_scale="jac", ftol=1e-12, xtol=1e-12, gtol=1e-12)
    moved = np.max(np.abs(plain.x * scale - x_run) / np.maximum(sd_run, 1e-300))
    if f_scale > 10 * np.max(np.abs(d)):  # every residual far inside the loss's knee
        assert moved < 0.05, ("f_scale above every residual, yet not the linear answer", moved)
    else:
        assert moved > 1.0, ("the robust answer is the linear one", moved)
    print(f"  linear answer {moved:.3g} sd away")
