"""Fits from Python: the config fit equals the CLI's bit for bit; the same fit on the
loaded arrays; the results directory reader; a short CMC."""
import os

import numpy as np
import pytest

import homodyne_hpc as hh

from conftest import CONFIG


def assert_same_as_cli(result, cli):
    """Every number parameters.json holds of the fit, compared exactly (JSON keeps 17
    significant digits: a double round-trips)."""
    assert result.status == cli["convergence_status"]
    for name, p in result.parameters.items():
        assert p["value"] == cli["parameters"][name]["value"], name
        assert p["uncertainty"] == cli["parameters"][name]["uncertainty"], name
    per_angle = cli["per_angle"]
    assert result.contrast.tolist() == [c["value"] for c in per_angle["contrast"]]
    assert result.offset.tolist() == [o["value"] for o in per_angle["offset"]]
    assert result.chi2 == cli["chi_squared"]


def test_config_fit_equals_cli_bit_for_bit(cli_result):
    _, cli = cli_result
    result = hh.fit_nlsq(config=CONFIG)
    assert isinstance(result, hh.NlsqResult)
    assert_same_as_cli(result, cli)
    d = result.to_dict()
    assert d["parameters"]["D0"]["value"] == cli["parameters"]["D0"]["value"]
    assert d["status"] == result.status and d["method"] == "nlsq"


def test_config_dict_with_options(cli_result):
    import yaml
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    result = hh.fit_nlsq(config=config, threads=2)
    assert_same_as_cli(result, cli_result[1])
    with pytest.raises(TypeError, match="unknown keyword"):
        hh.fit_nlsq(config=config, max_iterations=3)


def test_array_fit_of_loaded_data():
    data = hh.load_data(CONFIG)
    result = hh.fit_nlsq(data, mode="static", per_angle="individual", max_iterations=200,
                         parameters={"D0": 1000.0, "alpha": 0.0, "D_offset": 0.0})
    assert result.status in ("converged", "stalled", "max_iter")
    assert set(result.parameters) == {"D0", "alpha", "D_offset"}
    assert result.contrast.shape == (1,)
    again = hh.fit_nlsq(data, options={"mode": "static", "per_angle": "individual",
                                       "max_iterations": 200,
                                       "parameters": {"D0": {"initial": 1000.0},
                                                      "alpha": 0.0, "D_offset": 0.0}})
    assert again.values() == result.values()


def test_read_results_of_the_cli(cli_result):
    out, cli = cli_result
    r = hh.read_results(out)
    assert r["nlsq/parameters.json"] == cli
    fitted = r["nlsq/fitted_data.h5"]
    assert fitted["c2_exp"].shape == (1, 350, 350)
    assert np.array_equal(fitted["c2_exp"], hh.load_data(CONFIG).c2)
    assert "nlsq/fitted_data.h5" not in hh.read_results(out, arrays=False)
    with pytest.raises(FileNotFoundError):
        hh.read_results(os.path.join(str(out), "nowhere"))


def test_short_cmc_on_arrays_is_seeded():
    rng = np.random.default_rng(3)
    truth = [3.0e4, -0.6, 20.0]
    phi = np.array([0.0, 90.0])
    c2 = hh.model_c2("static", truth, phi, q=0.0054, dt=0.1, n_frames=40, contrast=0.3)
    noise = rng.normal(0.0, 3e-3, c2.shape)
    c2 = c2 + (noise + noise.transpose(0, 2, 1)) / 2
    data = hh.Data(c2=c2, phi_deg=phi, q=0.0054, dt=0.1)
    params = {"D0": 2.0e4, "alpha": -0.3, "D_offset": 0.0}
    warm = hh.fit_nlsq(data, mode="static", parameters=params)
    opts = dict(mode="static", parameters=params, warm_start=warm, shards=1, chains=2,
                warmup=100, draws=60, seed=5)
    post = hh.fit_cmc(data, **opts)
    assert isinstance(post, hh.CmcResult)
    assert post.status in ("converged", "not_converged")
    assert list(post.parameters) == ["D0", "alpha", "D_offset"]
    assert len(post.shards) == 1 and post.info["draws"] == 60
    assert post.to_dict()["nlsq"]["status"] == warm.status
    assert hh.fit_cmc(data, **opts).parameters == post.parameters  # the seed decides
