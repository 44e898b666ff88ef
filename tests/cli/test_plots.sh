#!/usr/bin/env bash
# Figures and the run report (issue 9): an NLSQ + CMC fit at 2 ranks with --save-plots
# writes valid PNGs of plausible size and a run_report.yaml that parses and holds the
# machine, libraries, config, data, timing, throughput, self-checks and status; the
# plot-only modes write their figures without a fit; a missing homodyne-plot is a
# warning, not a failure; a failed run still writes its report with the error.
set -uo pipefail
bindir=$1; mpiexec=$2
py=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export HOMODYNE_PLOT_DPI=80   # smaller figures, faster test (still checked for plausible size)

if ! "$py" -c 'import matplotlib, h5py, numpy' 2>/dev/null; then
  echo "SKIP: Debian's python3-matplotlib/h5py/numpy are not installed (exit 77: ctest reports the test as skipped)"; exit 77
fi
[ -x "$bindir/homodyne-plot" ] || fail "homodyne-plot not copied beside homodyne"

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
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,60,120" \
  --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || fail "synth"

# Checks PNG files: signature, IHDR chunk, plausible width/height and file size.
check_pngs() {
  "$py" - "$@" <<'PY' || exit 1
import os, struct, sys
for path in sys.argv[1:]:
    if not os.path.isfile(path):
        sys.exit("FAIL: {} missing".format(path))
    with open(path, "rb") as f:
        head = f.read(33)
    size = os.path.getsize(path)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        sys.exit("FAIL: {} is not a PNG".format(path))
    w, h = struct.unpack(">II", head[16:24])
    if not (300 <= w <= 8000 and 300 <= h <= 8000):
        sys.exit("FAIL: {} has implausible size {}x{}".format(path, w, h))
    if not (5000 <= size <= 20000000):
        sys.exit("FAIL: {} has implausible file size {}".format(path, size))
print("{} PNG(s) valid".format(len(sys.argv) - 1))
PY
}

# 0. What the fit figures compute: the fitted points exclude t = 0 and the diagonal, the
# colour limits of a map come from them (a diagonal spike does not set the scale), and the
# lag average of a surface that depends on the lag alone returns that function.
"$py" - "$bindir/homodyne-plot" <<'PY' || fail "fit figure helpers"
import importlib.machinery, importlib.util, sys
import numpy as np
loader = importlib.machinery.SourceFileLoader("homodyne_plot", sys.argv[1])
spec = importlib.util.spec_from_loader("homodyne_plot", loader)
hp = importlib.util.module_from_spec(spec)
loader.exec_module(hp)
n = 12
mask = hp.fitted_mask(n)
assert not mask[0].any() and not mask[:, 0].any() and not np.diagonal(mask).any()
assert mask.sum() == (n - 1) * (n - 2)
i, j = np.indices((n, n))
g = 1.0 + 0.3 * np.exp(-np.abs(i - j) / 3.0)   # depends on the lag only
m = g.copy()
np.fill_diagonal(m, 5.0)                       # a diagonal spike, not fitted
lo, hi = hp.percentile_limits(np.where(mask, m, np.nan))
assert hi < 1.4, (lo, hi)
avg = hp.lag_average(m, mask)
assert np.allclose(avg[1:n - 1], 1.0 + 0.3 * np.exp(-np.arange(1, n - 1) / 3.0)), avg
print("fit figure helpers: mask, limits and lag averages as documented")
PY

# 1. NLSQ + CMC at 2 ranks with --save-plots.
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/out" \
      --method both --n-warmup 100 --n-samples 100 --n-chains 2 --cmc-num-shards 2 --save-plots 2>&1)
code=$?
echo "$out" | grep -v '^  ' | tail -12
[ $code -eq 0 ] || fail "fit exit code $code"
grep -q 'warning: plots' <<<"$out" && fail "plot warning in a working installation"
o=$tmp/out
check_pngs "$o"/nlsq/c2_heatmaps_phi_{0.0,60.0,120.0}deg.png "$o/nlsq/c2_diagonal.png" \
  "$o/nlsq/g2_tau.png" "$o/nlsq/c2_cuts.png" "$o/plots/fit_comparison.png" \
  "$o"/cmc/trace_shard_0000{0,1}.png "$o/cmc/posterior_marginals.png" \
  "$o/cmc/corner_physics.png" "$o/cmc/convergence_summary.png"

# A CMC result without an nlsq/ beside it (warm-started by --nlsq-result from elsewhere): the
# corner and marginal plots take the NLSQ values from its analysis_results_cmc.json.
mkdir -p "$tmp/cmc_only" && cp -r "$o/cmc" "$tmp/cmc_only/"
"$py" - "$bindir/homodyne-plot" "$tmp/cmc_only" "$o" <<'PY' || fail "NLSQ estimates of a CMC-only result"
import json, sys
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
loader = SourceFileLoader("homodyne_plot", sys.argv[1])
plot = module_from_spec(spec_from_loader("homodyne_plot", loader))
loader.exec_module(plot)
own = plot.nlsq_estimates(sys.argv[3])
cmc_only = plot.nlsq_estimates(sys.argv[2])
assert cmc_only and set(cmc_only) <= set(own), (cmc_only, own)
for name, v in cmc_only.items():
    assert v == own[name], (name, v, own[name])
PY

# run_report.yaml parses and holds the fields of the issue.
"$py" - "$o/run_report.yaml" <<'PY' || exit 1
import sys
import yaml  # scripts/install-deps.sh installs python3-yaml: its absence fails the test
r = yaml.safe_load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("FAIL: run_report.yaml: " + what)
need(r["homodyne_hpc"]["version"] and r["homodyne_hpc"]["method"] == "both", "version/method")
st = r["status"]
need(st["exit_code"] == 0 and st["result"] == "converged" and st["plots"] == "written", "status")
m = r["machine"]
need(m["ranks"] == 2 and m["threads_per_rank"] >= 1 and isinstance(m["pinned"], bool), "machine")
need(len(m["hostnames"]) >= 1 and len(m["placement"]) == 2, "hostnames/placement")
need(all("host" in p and "cpuset" in p and "pus" in p for p in m["placement"]), "placement fields")
for lib in ("mpi", "petsc", "hdf5", "yaml_cpp", "hwloc"):
    need(str(r["libraries"][lib]).strip() != "", "library version " + lib)
c = r["config"]
need("effective" in c and "multi_start" in c["seeds"] and "cmc" in c["seeds"], "config/seeds")
need(c["effective"]["analysis_mode"] in ("static", "static_isotropic"), "effective config")
d = r["data"]
need(d["file"].endswith("data.h5") and d["angles"] == 3 and d["frames"] == 30, "data")
need(abs(d["q"] - 0.0054) < 1e-12 and d["fitted_points"] == 3 * 29 * 28 // 2, "data q/points")
t = r["timing_seconds"]
for phase in ("load", "fit", "cmc", "write_outputs", "plots"):
    need(phase in t, "phase " + phase)
for phase, v in t.items():
    need(v["min"] <= v["mean"] + 1e-12 and v["mean"] <= v["max"] + 1e-12, "min/mean/max " + phase)
tp = r["throughput"]
for k in ("points_per_second", "gradient_evaluations_per_second", "cmc_draws_per_second",
          "cmc_min_ess_per_second"):
    need(tp[k] is not None and tp[k] > 0, "throughput " + k)
checks = {c["check"]: c["result"] for c in r["self_checks"]}
need(all(v in ("PASSED", "FAILED") for v in checks.values()), "self-check results")
for name in ("results bitwise identical on every rank", "chi2 finite", "CMC draws finite",
             "plots written"):
    need(checks.get(name) == "PASSED", "self-check " + name)
print("run_report.yaml: all fields present")
PY

# 2. Plot-only modes (no fit): data and simulation, PDF on request.
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/po" \
  --plot-experimental-data --plot-simulated-data --phi-angles 0,90 -q || fail "plot-only run"
[ ! -e "$tmp/po/nlsq" ] || fail "plot-only mode ran a fit"
check_pngs "$tmp"/po/plots/experimental_data_phi_{0.0,60.0,120.0}.png \
  "$tmp/po/plots/experimental_data_diagonal.png" "$tmp"/po/plots/simulated_data_phi_{0.0,90.0}.png \
  "$tmp/po/plots/simulated_data_diagonal.png"
grep -q 'result: plotted' "$tmp/po/run_report.yaml" || fail "plot-only report status"
"$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/pdf" --plot-simulated-data \
  --plot-format pdf -q || fail "pdf run"
head -c 5 "$tmp/pdf/plots/simulated_data_diagonal.pdf" | grep -q '%PDF-' || fail "not a PDF"

# homodyne-plot's own bad input: exit 2 with a message.
"$bindir/homodyne-plot" "$tmp/nowhere" 2>/dev/null; [ $? -eq 2 ] || fail "missing dir not exit 2"
mkdir -p "$tmp/empty"
msg=$("$bindir/homodyne-plot" "$tmp/empty" 2>&1); [ $? -eq 2 ] || fail "empty dir not exit 2"
grep -q 'nothing to plot' <<<"$msg" || fail "empty dir message: $msg"

# 3. No homodyne-plot: a warning that says what to do, the fit still succeeds.
out=$(HOMODYNE_PLOT=/nonexistent/homodyne-plot "$bindir/homodyne" --config "$tmp/cfg.yaml" \
      --output-dir "$tmp/np" --save-plots 2>&1); code=$?
[ $code -eq 0 ] || fail "missing homodyne-plot failed the run ($code)"
grep -q 'warning: plots skipped: homodyne-plot not found' <<<"$out" || fail "no warning: $out"
grep -q 'plots: failed' "$tmp/np/run_report.yaml" || fail "report does not say plots failed"

# 4. A run failing after the fit still writes its report with the error.
out=$(HOMODYNE_FAIL_AT=output@1 "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" \
      --output-dir "$tmp/fail" 2>&1); code=$?
[ $code -ne 0 ] || fail "injected failure exited 0"
grep -q 'result: failed' "$tmp/fail/run_report.yaml" || fail "failed run without report"
grep -q 'injected failure' "$tmp/fail/run_report.yaml" || fail "report lacks the error message"
echo "PASS"
