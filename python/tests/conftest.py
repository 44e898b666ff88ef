"""Shared fixtures: the paths ctest hands over, and the CLI's fit of the demo config."""
import json
import os
import subprocess

import pytest

SOURCE = os.environ.get("HOMODYNE_SOURCE_DIR", os.getcwd())
# The real measured 350×350 matrix (examples/data), the demo's second fit.
CONFIG = os.path.join(SOURCE, "examples", "real_static.yaml")


def tool(name):
    path = os.environ.get(name)
    if not path or not os.path.exists(path):
        pytest.skip("%s is not set (run through ctest)" % name)
    return path


@pytest.fixture(scope="session")
def cli_result(tmp_path_factory):
    """The CLI's NLSQ fit of CONFIG at one process: (output directory, parameters.json)."""
    out = tmp_path_factory.mktemp("cli")
    run = subprocess.run([tool("HOMODYNE_CLI"), "--config", CONFIG, "--output-dir", str(out),
                          "--quiet"], cwd=SOURCE, capture_output=True, text=True)
    # 0 converged, 4 not converged, 5 misfit: all write their results.
    assert run.returncode in (0, 4, 5), run.stderr
    with open(out / "nlsq" / "parameters.json") as f:
        return out, json.load(f)
