"""What robust_loss_check.py and two_component_loss_check.py check alike: a run's plain chi2
and loss objective recomputed from its residual vector, and its answer against SciPy's.

The residual d = c2_exp - c2_model is homodyne's (unscaled, f_scale in c2 units); the run
counts each pair twice and reports chi2 = sum 2 (d/sigma)^2 and the objective
(f_scale/sigma)^2 sum 2 rho((d/f_scale)^2), sigma = 0.01.
"""
import numpy as np

SIGMA = 0.01


def rho(loss, z):
    """SciPy least_squares' rho of each loss."""
    if loss == "soft_l1":
        return 2 * (np.sqrt(1 + z) - 1)
    if loss == "huber":
        return np.where(z <= 1, z, 2 * np.sqrt(z) - 1)
    if loss == "cauchy":
        return np.log1p(z)
    if loss == "arctan":
        return np.arctan(z)
    return z


def check_chi2_and_objective(res, d, loss, f_scale):
    """The run's analysis_results_nlsq.json `res` against its residual vector `d`: the plain
    chi2, the objective and the loss block (1e-9 relative). Returns the plain chi2."""
    chi2 = 2.0 * np.sum((d / SIGMA) ** 2)
    chi2_run = res["fit_quality"]["chi_squared"]
    assert abs(chi2 - chi2_run) <= 1e-9 * chi2_run, ("plain chi2", chi2, chi2_run)
    objective = (2.0 * (f_scale / SIGMA) ** 2 * np.sum(rho(loss, (d / f_scale) ** 2))
                 if loss != "linear" else chi2)
    obj_run = res["loss"]["objective_value"]
    assert abs(objective - obj_run) <= 1e-9 * obj_run, ("objective", objective, obj_run)
    assert res["loss"]["loss"] == loss and abs(res["loss"]["f_scale"] - f_scale) < 1e-15, \
        res["loss"]
    return chi2


def compare_with_scipy(names, x_run, x_sp, sd_run):
    """Every parameter within 1e-6 relative or 1e-3 of its uncertainty. Returns the worst
    of min(relative, in sd) and the parameters that miss both."""
    worst, bad = 0.0, []
    for name, a, b, sd in zip(names, x_run, x_sp, sd_run):
        rel = abs(a - b) / max(abs(b), 1e-300)
        in_sd = abs(a - b) / sd if sd > 0 else np.inf
        worst = max(worst, min(rel, in_sd))
        if not (rel <= 1e-6 or abs(a - b) <= 1e-3 * sd):
            bad.append((name, a, b, rel, in_sd))
    return worst, bad
