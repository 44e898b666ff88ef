"""Fits on numpy arrays read the caller's buffer in place: no copy of the matrices on the
way in (shown by the peak RSS of a fit of a large array), and the same bits as the
converted (copied) array of the same values."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import homodyne_hpc as hh

from conftest import CONFIG

# 4 angles of 3000 x 3000 float64: 288 MB. The data are made row block by row block so no
# temporary as large as a matrix inflates the peak before the fit; the fit runs in a fresh
# interpreter so memory freed by other tests cannot hide an allocation.
LARGE_FIT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import homodyne_hpc as hh

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024

    n, angles = 3000, 4
    phi = np.array([0.0, 30.0, 60.0, 90.0])
    t = 0.1 * np.arange(n)
    c2 = np.empty((angles, n, n))
    rng = np.random.default_rng(7)
    for k in range(angles):
        for i in range(0, n, 100):
            lag = np.abs(t[i:i + 100, None] - t[None, :])
            c2[k, i:i + 100] = (1.0 + 0.3 * np.exp(-2 * 0.0054**2 * 2e4 * lag)
                                + 0.01 * rng.standard_normal(lag.shape))
    options = dict(mode="static", per_angle="individual", restarts_on_stall=False,
                   parameters={"D0": 1.5e4, "alpha": -0.3, "D_offset": 5.0})
    # MPI and PETSc start on the first fit: not part of the measured call.
    hh.fit_nlsq({"c2": c2[:, :8, :8].copy(), "phi_deg": phi, "q": 0.0054, "dt": 0.1},
                max_iterations=1, **options)
    try:  # the peak restarts at the current RSS (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    before = status("VmRSS")
    fit = hh.fit_nlsq({"c2": c2, "phi_deg": phi, "q": 0.0054, "dt": 0.1}, max_iterations=2,
                      **options)
    json.dump({"increase": status("VmHWM") - before, "array": c2.nbytes, "status": fit.status,
               "iterations": fit.iterations, "points": fit.to_dict()["points"]}, sys.stdout)
""")


def test_large_array_is_fitted_without_a_copy():
    run = subprocess.run([sys.executable, "-c", LARGE_FIT], capture_output=True, text=True,
                         env=dict(os.environ), timeout=240)
    assert run.returncode == 0, run.stderr
    m = json.loads(run.stdout)
    assert m["points"] == 4 * 2999 * 2998 // 2
    # Two iterations are not an answer, and the result says so.
    assert m["status"] in ("max_iter", "stalled", "converged")
    if m["status"] == "max_iter":
        assert m["iterations"] == 2
    # What the fit keeps is its share of the fitted (upper-triangle) points, about half the
    # matrices at one rank, plus work space; a copy of the input would add a whole array.
    assert m["increase"] < 0.75 * m["array"], m


def fit_values(result):
    return ([(p["value"], p["uncertainty"]) for p in result.parameters.values()],
            result.contrast.tolist(), result.offset.tolist(), result.chi2, result.iterations)


def test_in_place_fit_equals_the_converted_copy_bit_for_bit():
    data = hh.load_data(CONFIG)
    assert data.c2.flags["C_CONTIGUOUS"] and data.c2.dtype == np.float64
    options = dict(mode="static", per_angle="individual", max_iterations=30,
                   parameters={"D0": 1000.0, "alpha": 0.0, "D_offset": 0.0})
    in_place = hh.fit_nlsq(data, **options)
    # Fortran order is not C-contiguous: converted once into a new array, then fitted.
    copied = dict(c2=np.asfortranarray(data.c2), phi_deg=data.phi_deg, q=data.q, dt=data.dt)
    assert not copied["c2"].flags["C_CONTIGUOUS"]
    assert fit_values(hh.fit_nlsq(copied, **options)) == fit_values(in_place)
    # The caller's array is read, not written.
    assert np.array_equal(data.c2, copied["c2"])


def test_in_place_sampling_equals_the_converted_copy_bit_for_bit():
    c2 = hh.model_c2("static", [2e4, -0.4, 10], [0.0, 90.0], q=0.0054, dt=0.1, n_frames=40,
                     contrast=0.3, offset=1.0)
    c2 += 0.002 * np.random.default_rng(3).standard_normal(c2.shape)
    options = dict(mode="static", per_angle="individual", shards=1, chains=2, warmup=60,
                   draws=40, seed=5)
    in_place = hh.fit_cmc(dict(c2=c2, phi_deg=[0.0, 90.0], q=0.0054, dt=0.1), **options)
    strided = np.empty((2, 40, 80))[:, :, ::2]  # a non-contiguous view of the same values
    strided[...] = c2
    copied = hh.fit_cmc(dict(c2=strided, phi_deg=[0.0, 90.0], q=0.0054, dt=0.1), **options)
    assert posterior_numbers(copied) == posterior_numbers(in_place)


def posterior_numbers(post):
    """Every sampled number of the summary (repr: NaN equals NaN, -0.0 differs from 0.0)."""
    return repr((post.status, post.parameters, post.contrast.tolist(), post.offset.tolist(),
                 post.max_rhat, post.min_ess, post.shards))
