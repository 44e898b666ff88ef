"""The model from Python equals the C++ library's evaluation bit for bit (a C++ program of
the public API prints its values exactly), for every mode, fast and exact, and the
Jacobian."""
import subprocess

import numpy as np
import pytest

import homodyne_hpc as hh

from conftest import tool

CASES = {
    "static": [2.0e4, -0.4, 10.0],
    "laminar_flow": [2.0e4, -0.4, 10.0, 3.0e-3, 0.2, 2.0e-4, 4.0],
    "two_component": [1.0e4, 0.1, 5.0, 2.0e4, -0.3, 8.0, 0.02, 0.3, 1e-4,
                      0.4, 0.1, 1.0, 0.2, 10.0],
}
Q, DT, N, GAP = 0.0054, 0.1, 17, 2.0e6
PHI = [-20.0, 15.0, 80.0]
CONTRAST = [0.25, 0.3, 0.35]
OFFSET = [1.0, 1.01, 0.99]


def cpp_values(mode, what, physical):
    def join(values):
        return ",".join(repr(float(v)) for v in values)
    out = subprocess.run([tool("HOMODYNE_MODEL_VALUES"), mode, what, repr(Q), repr(DT), str(N),
                          repr(GAP), join(PHI), join(physical), join(CONTRAST), join(OFFSET)],
                         capture_output=True, text=True, check=True).stdout
    return np.array([float.fromhex(line) for line in out.split()])


@pytest.mark.parametrize("mode", sorted(CASES))
@pytest.mark.parametrize("exact", [False, True])
def test_c2_equals_cpp_bit_for_bit(mode, exact):
    c2 = hh.model_c2(mode, CASES[mode], PHI, q=Q, dt=DT, n_frames=N, contrast=CONTRAST,
                     offset=OFFSET, stator_rotor_gap=GAP, exact=exact)
    assert c2.shape == (len(PHI), N, N)
    expected = cpp_values(mode, "c2_exact" if exact else "c2", CASES[mode])
    assert np.array_equal(c2.ravel(), expected)
    # Not a constant: the model depends on the parameters it was given.
    assert np.ptp(c2) > 0


@pytest.mark.parametrize("mode", sorted(CASES))
def test_jacobian_equals_cpp_bit_for_bit(mode):
    jac, names = hh.model_jacobian(mode, CASES[mode], PHI, q=Q, dt=DT, n_frames=N,
                                   contrast=CONTRAST, offset=OFFSET, stator_rotor_gap=GAP)
    p = 2 * len(PHI) + len(CASES[mode])
    assert jac.shape == (len(PHI), N, N, p)
    assert names[:2] == ["contrast_0", "contrast_1"]
    assert names[2 * len(PHI):] == hh.parameter_names(mode)
    assert np.array_equal(jac.ravel(), cpp_values(mode, "jacobian", CASES[mode]))


@pytest.mark.parametrize("mode", sorted(CASES))
def test_jacobian_matches_finite_differences(mode):
    physical = np.array(CASES[mode])
    jac, names = hh.model_jacobian(mode, physical, PHI, q=Q, dt=DT, n_frames=N,
                                   contrast=CONTRAST, offset=OFFSET)
    args = dict(q=Q, dt=DT, n_frames=N, contrast=CONTRAST, offset=OFFSET, exact=True)
    scale = np.max(np.abs(jac))
    for p, name in enumerate(hh.parameter_names(mode)):
        h = 1e-4 * max(abs(physical[p]), 1e-2)
        up, down = physical.copy(), physical.copy()
        up[p] += h
        down[p] -= h
        fd = (hh.model_c2(mode, up, PHI, **args) - hh.model_c2(mode, down, PHI, **args)) / (2 * h)
        column = jac[..., names.index(name)]
        assert np.allclose(column, fd, rtol=1e-4, atol=1e-7 * scale), name


def test_scalar_contrast_applies_to_every_angle():
    a = hh.model_c2("static", CASES["static"], PHI, q=Q, dt=DT, n_frames=N, contrast=0.3,
                    offset=1.0)
    b = hh.model_c2("static", CASES["static"], PHI, q=Q, dt=DT, n_frames=N,
                    contrast=[0.3] * 3, offset=[1.0] * 3)
    assert np.array_equal(a, b)
