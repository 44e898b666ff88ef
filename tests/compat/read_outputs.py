"""Read a fit's outputs as a homodyne or xpcsjax user's script would: only json, yaml and
numpy, and only the files and fields homodyne's documentation describes (homodyne_results,
nlsq/parameters.json, nlsq/analysis_results_nlsq.json, nlsq/convergence_metrics.json).

usage: read_outputs.py OUTPUT_DIR MODE [yaml] [xpcsjax|homodyne]
With xpcsjax, the config is an xpcsjax config: xpcsjax's own files must be there too
(nlsq_result.json/.npz and its flat parameters.json, as xpcsjax's documentation describes
them); with homodyne they must not.
Exits non-zero, naming the file and field, when something a script would read is missing
or not a finite number."""
import json
import math
import sys

import numpy as np
import yaml

out, mode = sys.argv[1], sys.argv[2]
want_yaml = "yaml" in sys.argv[3:]
layout = "xpcsjax" if "xpcsjax" in sys.argv[3:] else "homodyne" if "homodyne" in sys.argv[3:] else None

PHYSICAL = {
    "static": ["D0", "alpha", "D_offset"],
    "laminar_flow": ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"],
    "two_component": ["D0_ref", "alpha_ref", "D_offset_ref", "D0_sample", "alpha_sample",
                      "D_offset_sample", "v0", "v_beta", "v_offset", "f0", "f1", "f2", "f3",
                      "phi0_het"],
}


def fail(msg):
    sys.exit(f"{out}: {msg}")


def load(rel):
    try:
        with open(f"{out}/{rel}") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{rel}: {e}")


def finite(x, what):
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        fail(f"{what} is {x!r}, not a finite number")


summary = load("homodyne_results.json")
for key in ("analysis_mode", "method", "parameters", "diagnostics", "success"):
    if key not in summary:
        fail(f"homodyne_results.json has no {key}")
if want_yaml:
    with open(f"{out}/homodyne_results.yaml") as f:
        if yaml.safe_load(f) != summary:
            fail("homodyne_results.yaml differs from homodyne_results.json")

params = load("nlsq/parameters.json")
for key in ("timestamp", "analysis_mode", "chi_squared", "reduced_chi_squared",
            "convergence_status", "parameters"):
    if key not in params:
        fail(f"nlsq/parameters.json has no {key}")
finite(params["chi_squared"], "chi_squared")
names = PHYSICAL["two_component" if mode == "two_component" else
                "laminar_flow" if mode == "laminar_flow" else "static"]
values = []
for name in names:
    entry = params["parameters"].get(name)
    if entry is None:
        fail(f"nlsq/parameters.json: no parameter {name}")
    finite(entry["value"], f"parameters.{name}.value")
    unc = entry["uncertainty"]
    if unc is not None:
        finite(unc, f"parameters.{name}.uncertainty")
    values.append(entry["value"])
values = np.asarray(values, dtype=float)

analysis = load("nlsq/analysis_results_nlsq.json")
if analysis.get("method") != "nlsq":
    fail("analysis_results_nlsq.json: method is not nlsq")
fq = analysis["fit_quality"]
for key in ("chi_squared", "reduced_chi_squared", "quality_flag"):
    if key not in fq:
        fail(f"analysis_results_nlsq.json: fit_quality has no {key}")
info = analysis["dataset_info"]
for key in ("n_angles", "n_time_points", "total_data_points"):
    if not isinstance(info.get(key), int) or info[key] <= 0:
        fail(f"analysis_results_nlsq.json: dataset_info.{key} is {info.get(key)!r}")
if info["total_data_points"] != info["n_angles"] * info["n_time_points"]:
    fail("dataset_info: total_data_points is not n_angles * n_time_points")
if "iterations" not in analysis["optimization_summary"]:
    fail("analysis_results_nlsq.json: optimization_summary has no iterations")

conv = load("nlsq/convergence_metrics.json")
for key in ("convergence", "recovery_actions", "quality_flag", "device_info"):
    if key not in conv:
        fail(f"convergence_metrics.json has no {key}")
if conv["convergence"]["status"] != params["convergence_status"]:
    fail("convergence_metrics.json and parameters.json disagree on the status")
if layout == "xpcsjax":
    r = load("nlsq_result.json")
    if r.get("schema") != "xpcsjax.nlsq.result/v1":
        fail(f"nlsq_result.json: schema is {r.get('schema')!r}")
    xnames = r["config"]["parameter_names"]
    if list(r["parameters"]) != xnames:
        fail("nlsq_result.json: parameters and config.parameter_names differ")
    for name in xnames:
        finite(r["parameters"][name]["value"], f"nlsq_result.json parameters.{name}.value")
    if load("parameters.json") != r["parameters"]:
        fail("parameters.json differs from nlsq_result.json's parameters")
    z = np.load(f"{out}/nlsq_result.npz")
    if list(z["parameter_names"]) != xnames or len(z["parameters"]) != len(xnames):
        fail("nlsq_result.npz: parameter_names/parameters differ from nlsq_result.json")
    if not np.array_equal(z["parameters"], [r["parameters"][n]["value"] for n in xnames]):
        fail("nlsq_result.npz: parameters differ from nlsq_result.json")
    if load("convergence_metrics.json")["status"] != r["metadata"]["convergence_status"]:
        fail("convergence_metrics.json: status differs from nlsq_result.json")
elif layout == "homodyne":
    import os
    for name in ("nlsq_result.json", "nlsq_result.npz", "parameters.json"):
        if os.path.exists(f"{out}/{name}"):
            fail(f"{name} written for a homodyne config")
print(f"{out}: {params['convergence_status']}, reduced chi2 {params['reduced_chi_squared']:.4g}, "
      f"{info['n_angles']} angle(s), {len(values)} physical parameters read")
