"""CMC of a config from Python equals the CLI's `--method cmc` of the same config bit for
bit (the posterior means and standard deviations of cmc/parameters.json)."""
import json
import subprocess

import yaml

import homodyne_hpc as hh

from conftest import CONFIG, SOURCE, tool


def small_cmc_config(path):
    with open(CONFIG) as f:
        config = yaml.safe_load(f)
    config["analyzer_parameters"]["end_frame"] = 60
    config["experimental_data"]["data_folder_path"] = SOURCE + "/examples/data"
    # A test of equal bits, not of a posterior: 40 draws of the real matrix's 60 frames, whose
    # D0 bound lies within one Laplace sd of the mode (docs/cmc.md, "Choosing the
    # coordinates"), diverge on 10-35 % of the draws whichever map the mode search builds, so
    # the shard is kept up to half divergent draws rather than the run failing.
    config["optimization"]["cmc"] = {
        "seed": 7, "sharding": {"num_shards": 1},
        "per_shard_mcmc": {"num_warmup": 100, "num_samples": 40, "num_chains": 2},
        "validation": {"max_divergence_rate": 0.5}}
    path.write_text(yaml.safe_dump(config))
    return config


def test_config_cmc_equals_cli_bit_for_bit(tmp_path):
    config = small_cmc_config(tmp_path / "cmc.yaml")
    run = subprocess.run([tool("HOMODYNE_CLI"), "--config", str(tmp_path / "cmc.yaml"),
                          "--method", "cmc", "--output-dir", str(tmp_path / "out"), "--quiet"],
                         capture_output=True, text=True)
    assert run.returncode in (0, 4, 5), run.stderr  # the CMC writes its files in each
    with open(tmp_path / "out" / "cmc" / "parameters.json") as f:
        cli = json.load(f)
    post = hh.fit_cmc(config=config)
    assert post.info["draws"] == 40 and len(post.shards) == 1
    for name, p in post.parameters.items():
        assert p["mean"] == cli["parameters"][name]["mean"], name
        assert p["std"] == cli["parameters"][name]["std"], name
    assert post.status == ("converged" if cli["convergence"]["all_chains_converged"]
                           else "not_converged")
    assert isinstance(post.nlsq, hh.NlsqResult)
