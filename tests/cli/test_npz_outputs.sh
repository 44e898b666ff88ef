#!/usr/bin/env bash
# homodyne's NumPy files, read as a homodyne script reads them (numpy.load, json, yaml):
# nlsq/fitted_data.npz with homodyne's arrays, homodyne_results.npz (--output-format npz),
# for --method cmc cmc/samples.npz (samples, param_names, r_hat, ess, acceptance_rate),
# cmc/fitted_data.npz and homodyne_results.{json,yaml}, and with output.layout: xpcsjax
# xpcsjax's nlsq_result.{json,npz} and flat files under output.base_directory/directory.
# Names, shapes, and values equal to those of the JSON and HDF5 files of the same run.
set -uo pipefail
bindir=$(cd "$1" && pwd); mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
output: {fitted_data: full}
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 \
  --angles "0,60,120" --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || fail "synth"

"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/n" \
  --output-format npz > "$tmp/n.log" 2>&1 || { tail -5 "$tmp/n.log"; fail "nlsq run"; }
grep -q 'not written' "$tmp/n.log" && fail "a note says a file is not written"
"$py" - "$tmp/n" <<'PY' || fail "nlsq npz files"
import json, sys
import h5py
import numpy as np
d = sys.argv[1]
f = np.load(d + "/nlsq/fitted_data.npz")
expected = ["phi_angles", "c2_exp", "c2_theoretical_raw", "c2_theoretical_scaled",
            "per_angle_scaling", "per_angle_scaling_solver", "residuals",
            "residuals_normalized", "t1", "t2", "q", "c2_solver_scaled"]
assert f.files == expected, f.files
n, N = 3, 30
for k in ("c2_exp", "c2_theoretical_raw", "c2_theoretical_scaled", "c2_solver_scaled",
          "residuals", "residuals_normalized"):
    assert f[k].shape == (n, N, N) and f[k].dtype == np.float64, (k, f[k].shape, f[k].dtype)
assert f["per_angle_scaling"].shape == (n, 2) and f["per_angle_scaling_solver"].shape == (n, 2)
assert f["t1"].shape == (N,) and f["t2"].shape == (N,) and f["q"].shape == (1,)
# homodyne's formulas, exactly.
a, b = f["per_angle_scaling"][:, 0, None, None], f["per_angle_scaling"][:, 1, None, None]
assert np.array_equal(f["c2_theoretical_scaled"], a * f["c2_theoretical_raw"] + b)
assert np.array_equal(f["residuals"], f["c2_exp"] - f["c2_theoretical_scaled"])
c = f["c2_exp"]
assert np.all(c != 0)
assert np.array_equal(f["residuals_normalized"], f["residuals"] / (0.05 * c))
sc = f["per_angle_scaling_solver"]
solver = sc[:, 1, None, None] + sc[:, 0, None, None] * (f["c2_theoretical_raw"] - 1.0)
assert np.max(np.abs(f["c2_solver_scaled"] - solver)) < 1e-12
# The same numbers as the JSON files and fitted_data.h5.
p = json.load(open(d + "/nlsq/parameters.json"))
pa = p["per_angle"]
assert np.array_equal(f["phi_angles"], pa["phi_angles_deg"])
assert np.array_equal(sc[:, 0], [x["value"] for x in pa["contrast"]])
assert np.array_equal(sc[:, 1], [x["value"] for x in pa["offset"]])
a_json = json.load(open(d + "/nlsq/analysis_results_nlsq.json"))
assert f["q"][0] == a_json["dataset_info"]["q_value"]
assert a_json["dataset_info"]["n_time_points"] == N * N
with h5py.File(d + "/nlsq/fitted_data.h5", "r") as h:
    for k in expected:
        assert np.array_equal(f[k], h[k][...]), k
# The data themselves: c2_exp is the file's matrices (diagonal-corrected).
assert abs(float(np.mean(c)) - 1.0) < 1.0
# homodyne_results.npz: results_summary[0] is homodyne_results.json's content.
r = np.load(d + "/homodyne_results.npz")
assert r.files == ["results_summary"] and r["results_summary"].shape == (1,)
summary = json.loads(str(r["results_summary"][0]))
assert summary == json.load(open(d + "/homodyne_results.json")), summary
assert summary["method"] == "nlsq"
PY

"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/c" --method cmc \
  --output-format yaml --n-warmup 60 --n-samples 60 --n-chains 2 --cmc-num-shards 2 \
  > "$tmp/c.log" 2>&1 || { tail -5 "$tmp/c.log"; fail "cmc run"; }
"$py" - "$tmp/c" <<'PY' || fail "cmc npz files"
import json, math, sys
import h5py
import numpy as np
import yaml
d = sys.argv[1]
s = np.load(d + "/cmc/samples.npz")
assert s.files == ["samples", "param_names", "r_hat", "ess", "acceptance_rate"], s.files
names = [str(x) for x in s["param_names"]]
diag = json.load(open(d + "/cmc/diagnostics.json"))
per = diag["convergence"]["per_parameter_diagnostics"]
assert names == [x["name"] for x in per], names
assert {"D0", "alpha", "D_offset"} <= set(names), names
draws = s["samples"]
assert draws.ndim == 2 and draws.shape[1] == len(names) and draws.shape[0] > 0, draws.shape
with h5py.File(d + "/cmc/samples.h5", "r") as h:
    assert np.array_equal(draws, h["samples"][...])
    assert h.attrs["param_names"] in (",".join(names), ",".join(names).encode())
for k in ("r_hat", "ess"):
    assert s[k].shape == (len(names),), (k, s[k].shape)
    assert np.array_equal(s[k], [x[k] for x in per]), (k, s[k], per)
params = json.load(open(d + "/cmc/parameters.json"))
assert s["acceptance_rate"].shape == (1,)
assert s["acceptance_rate"][0] == params["convergence"]["acceptance_rate"]
# homodyne_results.{json,yaml} of a CMC run: the posterior means in the samples' order.
hr = json.load(open(d + "/homodyne_results.json"))
assert hr["method"] == "cmc" and hr["analysis_mode"] == "static", hr
assert np.allclose(hr["parameters"], draws.mean(axis=0), rtol=1e-12, atol=0), hr
for name, value in zip(names, hr["parameters"]):
    if name in params["parameters"]:
        assert math.isclose(value, params["parameters"][name]["mean"], rel_tol=1e-9), (name, value)
assert hr["diagnostics"]["converged"] == params["convergence"]["all_chains_converged"]
assert yaml.safe_load(open(d + "/homodyne_results.yaml")) == hr
# cmc/fitted_data.npz: homodyne's CMC set (no solver arrays), as cmc/fitted_data.h5.
f = np.load(d + "/cmc/fitted_data.npz")
assert f.files == ["phi_angles", "c2_exp", "c2_theoretical_raw", "c2_theoretical_scaled",
                   "per_angle_scaling", "residuals", "residuals_normalized", "t1", "t2",
                   "q"], f.files
assert np.array_equal(f["residuals"], f["c2_exp"] - f["c2_theoretical_scaled"])
with h5py.File(d + "/cmc/fitted_data.h5", "r") as h:
    for k in f.files:
        assert np.array_equal(f[k], h[k][...]), k
PY
[ ! -e "$tmp/c/nlsq" ] || fail "--method cmc wrote nlsq/"

# output.layout: xpcsjax adds xpcsjax's files; without --output-dir the results go to
# output.base_directory/output.directory (xpcsjax's rule), not to the current folder.
{ sed '/^output:/d' "$tmp/cfg.yaml"
  echo "output: {base_directory: $tmp/base, directory: run1, layout: xpcsjax}"; } > "$tmp/x.yaml"
(cd "$tmp" && "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/x.yaml" > "$tmp/x.log" 2>&1) \
  || { tail -5 "$tmp/x.log"; fail "xpcsjax layout run"; }
[ ! -e "$tmp/homodyne_results" ] || fail "output.directory ignored"
"$py" - "$tmp/base/run1" <<'PY' || fail "xpcsjax files"
import json, sys
import numpy as np
d = sys.argv[1]
r = json.load(open(d + "/nlsq_result.json"))
assert r["schema"] == "xpcsjax.nlsq.result/v1", r["schema"]
assert set(r) == {"schema", "timestamp", "config", "parameters", "metadata"}, set(r)
names = r["config"]["parameter_names"]
assert names == list(r["parameters"]), names
assert names[:3] == ["D0", "alpha", "D_offset"], names
ours = json.load(open(d + "/nlsq/parameters.json"))["parameters"]
for name in ("D0", "alpha", "D_offset"):
    assert r["parameters"][name]["value"] == ours[name]["value"], name
    assert r["parameters"][name]["uncertainty"] == ours[name]["uncertainty"], name
m = r["metadata"]
for k in ("success", "convergence_status", "message", "iterations", "chi_squared",
          "reduced_chi_squared", "execution_time", "quality_flag", "nlsq_diagnostics"):
    assert k in m, k
assert m["nlsq_diagnostics"]["parameter_names"] == names
a = json.load(open(d + "/nlsq/analysis_results_nlsq.json"))
assert m["chi_squared"] == a["fit_quality"]["chi_squared"]
# The flat files.
flat = json.load(open(d + "/parameters.json"))
assert flat == r["parameters"], flat
fa = json.load(open(d + "/analysis_results_nlsq.json"))
assert fa["dataset_info"] == {"shape": [3, 30, 30], "n_points": 2700}, fa
assert fa["fit_quality"]["chi_squared"] == m["chi_squared"]
fc = json.load(open(d + "/convergence_metrics.json"))
assert fc["status"] == m["convergence_status"] and fc["iterations"] == m["iterations"], fc
# nlsq_result.npz: the same numbers.
z = np.load(d + "/nlsq_result.npz")
assert list(z["parameter_names"]) == names
assert np.array_equal(z["parameters"], [r["parameters"][n]["value"] for n in names])
unc = [r["parameters"][n]["uncertainty"] for n in names]
assert np.array_equal(z["uncertainties"], [np.nan if u is None else u for u in unc], equal_nan=True)
assert z["chi_squared"].shape == () and float(z["chi_squared"]) == m["chi_squared"]
assert int(z["iterations"]) == m["iterations"] and z["iterations"].dtype == np.int64
assert json.loads(str(z["metadata_json"])) == m
assert json.loads(str(z["config_json"])) == r["config"]
PY

# A rerun into the same folder never leaves two runs' files side by side: in homodyne's layout
# it removes the earlier run's xpcsjax files (and says so); in xpcsjax's it replaces the whole
# set, which then describes the same fit as nlsq/ beside it.
xfiles="nlsq_result.json nlsq_result.npz parameters.json analysis_results_nlsq.json convergence_metrics.json"
sed 's/layout: xpcsjax/layout: homodyne/' "$tmp/x.yaml" > "$tmp/h.yaml"
"$bindir/homodyne" --config "$tmp/h.yaml" -o "$tmp/base/run1" > "$tmp/h.log" 2>&1 ||
  { tail -5 "$tmp/h.log"; fail "homodyne layout rerun"; }
for f in $xfiles; do [ ! -e "$tmp/base/run1/$f" ] || fail "an earlier run's $f was left beside this run's results"; done
grep -q "^output: removed an earlier run's parameters.json, .*nlsq_result.json from" "$tmp/h.log" ||
  { cat "$tmp/h.log"; fail "the removal of the earlier run's files is not named"; }
sed 's/values: \[20000, -0.3, 0\]/values: [25000, -0.5, 0]/' "$tmp/x.yaml" > "$tmp/x2.yaml"
"$bindir/homodyne" --config "$tmp/x2.yaml" > "$tmp/x2.log" 2>&1 || { tail -5 "$tmp/x2.log"; fail "xpcsjax rerun"; }
"$py" - "$tmp/base/run1" <<'PY' || fail "the rerun's xpcsjax files are not one run's"
import json, sys
import numpy as np
d = sys.argv[1]
r = json.load(open(d + "/nlsq_result.json"))
ours = json.load(open(d + "/nlsq/parameters.json"))
assert r["timestamp"] == ours["timestamp"], (r["timestamp"], ours["timestamp"])
assert json.load(open(d + "/parameters.json")) == r["parameters"]
assert list(np.load(d + "/nlsq_result.npz")["parameters"]) == [v["value"] for v in r["parameters"].values()]
assert json.load(open(d + "/convergence_metrics.json"))["iterations"] == r["metadata"]["iterations"]
PY
[ -z "$(find "$tmp/n" "$tmp/c" "$tmp/base" -name '*parts*' -o -name '*.tmp*' -o -name '.homodyne-staging')" ] ||
  fail "a temporary file was left"
echo "PASS"
