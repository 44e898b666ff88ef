#!/usr/bin/env bash
# `homodyne --config` at 2 ranks: a synthetic fit writes every result file once and
# converges; PETSc options reach TAO; bad input exits 2 with a message naming the file
# or key and writes nothing.
set -uo pipefail
bindir=$1; mpiexec=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [15000, -0.3, 0, 0.002, 0.1, 0.0001, 2]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 60 --angles "0,45,90,135" \
  --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 --param phi0=4 --noise 0.001 -q \
  || { echo "FAIL: synth"; exit 1; }

out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/out" 2>&1); code=$?
echo "$out" | tail -25
[ $code -eq 0 ] || { echo "FAIL: fit exit code $code"; exit 1; }
for f in nlsq/parameters.json nlsq/analysis_results_nlsq.json nlsq/convergence_metrics.json \
         nlsq/fitted_data.h5 homodyne_results.json; do
  [ -s "$tmp/out/$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
[ "$(grep -c 'NLSQ OPTIMIZATION COMPLETE' <<<"$out")" -eq 1 ] || { echo "FAIL: summary not once"; exit 1; }
grep -q 'truth vs fit' <<<"$out" || { echo "FAIL: no truth table"; exit 1; }
grep -q '"convergence_status": "converged"' "$tmp/out/nlsq/parameters.json" || { echo "FAIL: not converged"; exit 1; }
# The default pipeline's phi0 check ran (4 restarts) and says so; the anti-degeneracy stage
# is inactive for the averaged layout of 4 angles and says why.
/usr/bin/python3 - "$tmp/out/nlsq/analysis_results_nlsq.json" <<'PY' || { echo "FAIL: nlsq_diagnostics"; exit 1; }
import json, sys
a = json.load(open(sys.argv[1]))
d = a["nlsq_diagnostics"]
assert d["hierarchical_active"] is False and d["hierarchical"] is None, d
assert "averaged" in d["hierarchical_inactive_reason"] and d["regularization_active"] is False, d
assert len(a["recovery_actions"]) == 1 and a["recovery_actions"][0].startswith("phi0 check: "), a
PY
# output.fitted_data: model (the default): the data and the model, not the derived arrays.
h5ls "$tmp/out/nlsq/fitted_data.h5" | grep -q 'c2_theoretical_raw' || { echo "FAIL: fitted_data.h5 content"; exit 1; }
h5ls "$tmp/out/nlsq/fitted_data.h5" | grep -q 'c2_solver_scaled' && { echo "FAIL: model level holds a derived array"; exit 1; }
ls -a "$tmp/out/nlsq" | grep -q 'tmp' && { echo "FAIL: temporary file left"; exit 1; }
rep="$tmp/out/run_report.yaml"
# Every phase of the job from process start, and what no phase accounts for.
/usr/bin/python3 - "$tmp/out/run_report.yaml" <<'PY' || { echo "FAIL: run_report phases"; exit 1; }
import sys, yaml
r = yaml.safe_load(open(sys.argv[1]))
t = r["timing_seconds"]
for phase in ("launch", "init", "config", "load", "initial_scaling", "setup", "fit",
              "write_outputs", "write_fitted_data"):
    assert phase in t and t[phase]["max"] >= 0.0, (phase, t)
w = r["wall_seconds"]
assert w["process_start_to_report"] > 0.0, w
assert abs(w["sum_of_phases_max"] - sum(v["max"] for v in t.values())) < 1e-9, w
assert abs(w["outside_phases"]) < 0.5 * w["process_start_to_report"], w
PY
for key in '^machine:' '^libraries:' '^config:' '^data:' '^timing_seconds:' '^throughput:' \
           '^self_checks:' '  ranks: 2' 'hdf5_parallel: true' '^recovery_actions:' \
           '^anti_degeneracy:' '  inactive_reason: auto_averaged per-angle layout'; do
  grep -q "$key" "$rep" || { echo "FAIL: run_report.yaml lacks $key"; exit 1; }
done
[ "$(grep -c '{rank: ' "$rep")" -eq 2 ] || { echo "FAIL: placement of both ranks"; exit 1; }
grep -q 'results bitwise identical on every rank, result: PASSED' "$rep" || { echo "FAIL: self-check"; exit 1; }
grep -q 'FAILED' "$rep" && { echo "FAIL: a self-check failed"; exit 1; }

# With a TAO local solver, PETSc options reach TAO (one iteration allowed → max_iter, exit 4:
# written but not converged) and monitors print once (one solve: no stall recovery, no phi0 check).
sed 's|    anti_degeneracy: {per_angle_mode: auto}|    anti_degeneracy: {per_angle_mode: auto}\n    local_solver: bnls\n    recovery: {on_stall: none, phi0_restarts: 0}|' \
  "$tmp/cfg.yaml" > "$tmp/tao.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/tao.yaml" --output-dir "$tmp/out2" \
      -tao_max_it 1 -tao_monitor 2>&1); code=$?
grep -q '"convergence_status": "max_iter"' "$tmp/out2/nlsq/parameters.json" \
  || { echo "FAIL: -tao_max_it not honoured"; exit 1; }
[ $code -eq 4 ] || { echo "FAIL: a max_iter fit exited $code (expected 4)"; exit 1; }
grep -q 'result: max_iter' "$tmp/out2/run_report.yaml" || { echo "FAIL: run_report status"; exit 1; }
[ "$(grep -c '0 TAO,' <<<"$out")" -eq 1 ] || { echo "FAIL: -tao_monitor output not exactly once"; exit 1; }

# --method both: NLSQ files and the CMC files, each summary printed once.
cat > "$tmp/static.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: static.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/static.yaml" -o "$tmp/static.h5" --frames 40 --angles "0,60,120" \
  --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || { echo "FAIL: synth static"; exit 1; }
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/static.yaml" --output-dir "$tmp/outc" \
      --method both --n-warmup 100 --n-samples 100 --n-chains 2 --cmc-num-shards 2 2>&1); code=$?
echo "$out" | tail -22
[ $code -eq 0 ] || { echo "FAIL: --method both exit code $code"; exit 1; }
for f in nlsq/parameters.json cmc/parameters.json cmc/analysis_results_cmc.json cmc/diagnostics.json \
         cmc/shard_diagnostics.json cmc/samples.h5 cmc/fitted_data.h5 run_report.yaml; do
  [ -s "$tmp/outc/$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
# cmc/fitted_data.h5 has the layout of nlsq/fitted_data.h5 (same datasets and shapes).
[ "$(h5ls "$tmp/outc/cmc/fitted_data.h5")" = "$(h5ls "$tmp/outc/nlsq/fitted_data.h5")" ] ||
  { echo "FAIL: cmc/fitted_data.h5 layout differs from nlsq/"; exit 1; }
[ "$(grep -c 'CMC SAMPLING COMPLETE' <<<"$out")" -eq 1 ] || { echo "FAIL: CMC summary not once"; exit 1; }
grep -q '"method": "cmc"' "$tmp/outc/cmc/parameters.json" || { echo "FAIL: cmc/parameters.json"; exit 1; }
grep -q 'method: both' "$tmp/outc/run_report.yaml" || { echo "FAIL: run report method"; exit 1; }
h5ls -r "$tmp/outc/cmc/samples.h5" | grep -q 'shards/shard_00001' || { echo "FAIL: per-shard draws"; exit 1; }
grep -q 'treedepth_saturation_rate' "$tmp/outc/cmc/shard_diagnostics.json" || { echo "FAIL: shard diagnostics"; exit 1; }
grep -q "rejected_shards" "$tmp/outc/cmc/diagnostics.json" && grep -q "used_in_combination" "$tmp/outc/cmc/shard_diagnostics.json" || { echo "FAIL: shard filter report"; exit 1; }
grep -q 'CMC: shard 0 done' <<<"$out" || { echo "FAIL: no CMC progress line"; exit 1; }
# cmc/diagnostics.json read as a homodyne script reads it (its keys and types), and the
# comparison with the NLSQ warm start in analysis_results_cmc.json.
/usr/bin/python3 - "$tmp/outc/cmc" <<'PY' || { echo "FAIL: diagnostics.json keys"; exit 1; }
import json, math, os, sys
d = json.load(open(os.path.join(sys.argv[1], "diagnostics.json")))
c = d["convergence"]
assert isinstance(c["all_chains_converged"], bool) and c["r_hat_threshold"] == 1.1
assert c["ess_threshold"] == 400
names = [p["name"] for p in c["per_parameter_diagnostics"]]
assert "D0" in names and "alpha" in names, names
for p in c["per_parameter_diagnostics"]:
    assert set(p) == {"name", "r_hat", "ess", "converged", "deterministic"}, p
    assert p["r_hat"] > 0.9 and p["ess"] > 0 and p["converged"] == (p["r_hat"] < 1.1), p
e = d["sampling_efficiency"]
assert 0 < e["acceptance_rate"] <= 1 and 0 < e["target_acceptance"] < 1
assert isinstance(e["divergences"], int) and isinstance(e["tree_depth_warnings"], int)
assert 0 < d["posterior_checks"]["effective_sample_size_ratio"]
s = d["cmc_specific"]
assert s["num_shards"] == 2 and s["shard_summary"]["num_shards"] == 2
assert 0 <= s["shard_summary"]["convergence_rate"] <= 1
assert s["overall_diagnostics"]["n_shards_total"] == 2
assert len(s["shards"]) == 2 and "D0" in s["shards"][0]["r_hat"]
for sh in s["shards"]:
    assert sum(sh["tree_depth_histogram"]) == 2 * 100, sh  # every draw of both chains
    assert sh["step_size_mean"] > 0 and sh["ess_per_gradient"] > 0, sh
    assert sh["sampling_seconds"] > 0 and sh["ess_per_second"] > 0, sh
    for name, e in sh["ess"].items():  # the reported ESS is the smaller of bulk and tail
        assert e == min(sh["ess_bulk"][name], sh["ess_tail"][name]) > 0, (name, sh)
    assert sh["warmup_gradient_evaluations"] >= 2 * 100, sh  # at least one step per iteration
assert "log contrast" in s["sampled_coordinates"] and "Laplace" in s["sampled_coordinates"], s
assert s["noise_sigma"] == {"sampled": True, "value": None}, s["noise_sigma"]
a = json.load(open(os.path.join(sys.argv[1], "analysis_results_cmc.json")))
cmp = {x["parameter"]: x for x in a["nlsq_comparison"]}
assert set(cmp) == {"D0", "alpha", "D_offset"}, cmp
assert all(isinstance(x["disagrees"], bool) for x in cmp.values())
# homodyne's names: dataset_info, execution_time, convergence.min_r_hat.
info = a["dataset_info"]
n_t = info["n_time_points"]
assert info["n_angles"] == 3 and n_t == 40 ** 2, info  # homodyne's N², the 40 frames
assert info["total_data_points"] == 3 * n_t, info
assert info["fitted_pairs"] == 3 * 39 * 38 // 2, info
assert abs(info["q_value"] - 0.0054) < 1e-9, info
assert a["sampling_summary"]["execution_time"] > 0, a["sampling_summary"]
p = json.load(open(os.path.join(sys.argv[1], "parameters.json")))
cv = p["convergence"]
assert 0.9 < cv["min_r_hat"] <= cv["max_r_hat"], cv
# The run's verdict uses the configured thresholds (defaults: R-hat 1.1, ESS 100), every shard.
sh = d["cmc_specific"]["shards"]
ok = all(x["max_r_hat"] < 1.1 and x["min_ess"] >= 100 for x in sh)
assert c["all_chains_converged"] == ok, (c["all_chains_converged"], sh)
PY

# --method cmc with the warm start read back from the previous run's NLSQ files; with
# output.fitted_data: none, no fitted_data.h5; sigma fixed at a known noise level.
{ cat "$tmp/static.yaml"; echo "output: {fitted_data: none}"
  echo "optimization: {cmc: {known_sigma: 0.003, validation: {min_per_shard_ess: 1.0e9}}}"
} > "$tmp/static_none.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/static_none.yaml" --output-dir "$tmp/outw" \
      --method cmc --nlsq-result "$tmp/outc" --n-warmup 80 --n-samples 80 --n-chains 2 \
      --cmc-num-shards 2 2>&1); code=$?
[ $code -eq 0 ] || { echo "FAIL: --nlsq-result run exit $code"; echo "$out" | tail -5; exit 1; }
grep -q 'NLSQ OPTIMIZATION COMPLETE' <<<"$out" && { echo "FAIL: NLSQ ran despite --nlsq-result"; exit 1; }
[ -s "$tmp/outw/cmc/parameters.json" ] && [ ! -e "$tmp/outw/nlsq" ] || { echo "FAIL: cmc-only outputs"; exit 1; }
[ ! -e "$tmp/outw/cmc/fitted_data.h5" ] || { echo "FAIL: fitted_data: none wrote cmc/fitted_data.h5"; exit 1; }
/usr/bin/python3 - "$tmp/outw/cmc" <<'PY' || { echo "FAIL: known_sigma not reported as fixed"; exit 1; }
import json, os, sys
p = json.load(open(os.path.join(sys.argv[1], "parameters.json")))
assert p["sampling_summary"]["noise_sigma"] == {"sampled": False, "value": 0.003}, p
d = json.load(open(os.path.join(sys.argv[1], "diagnostics.json")))
assert d["cmc_specific"]["noise_sigma"] == {"sampled": False, "value": 0.003}
assert all(sh["sigma_mean"] == 0.003 for sh in d["cmc_specific"]["shards"])
# The configured min_per_shard_ess (1e9, out of reach) decides the verdict, and each shard
# that misses it is named in the warnings.
assert d["convergence"]["all_chains_converged"] is False
notes = [w for w in d["cmc_specific"]["warnings"] if "not converged" in w]
assert len(notes) == 2 and all("min ESS" in w and "< 1000000000" in w for w in notes), notes
PY
grep -q 'NOT converged (R-hat ≥ 1.1 or ESS < 1000000000)' <<<"$out" ||
  { echo "FAIL: the summary does not give the configured ESS threshold"; exit 1; }
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/static.yaml" --output-dir "$tmp/outx" \
      --method cmc --nlsq-result "$tmp/nowhere" 2>&1); code=$?
[ $code -eq 2 ] && grep -q 'nowhere' <<<"$out" || { echo "FAIL: missing --nlsq-result gave $code"; exit 1; }

# Bad input: exit 2, the file/key named, nothing written.
printf 'analysis_mode: laminar_flow\nanalyzer_parameters:\n  dtt: 0.1\n' > "$tmp/bad.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/bad.yaml" --output-dir "$tmp/out3" --strict 2>&1); code=$?
[ $code -eq 2 ] || { echo "FAIL: misspelt key gave $code"; exit 1; }
grep -q 'analyzer_parameters.dtt' <<<"$out" || { echo "FAIL: key not named: $out"; exit 1; }
[ ! -e "$tmp/out3" ] || { echo "FAIL: output written for a bad config"; exit 1; }
sed "s/data.h5/missing.h5/" "$tmp/cfg.yaml" > "$tmp/nodata.yaml"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/nodata.yaml" --output-dir "$tmp/out4" 2>&1); code=$?
[ $code -eq 2 ] && grep -q 'missing.h5' <<<"$out" || { echo "FAIL: missing data: $code $out"; exit 1; }
[ "$(grep -c 'missing.h5' <<<"$out")" -eq 1 ] || { echo "FAIL: error printed more than once"; exit 1; }
[ ! -e "$tmp/out4" ] || { echo "FAIL: output directory created for missing data"; exit 1; }
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$tmp/data.h5/sub" 2>&1); code=$?
[ $code -eq 2 ] && grep -q -- '--output-dir' <<<"$out" || { echo "FAIL: unwritable output: $code"; exit 1; }
echo PASS
