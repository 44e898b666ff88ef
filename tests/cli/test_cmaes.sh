#!/usr/bin/env bash
# The CMA-ES global stage of `homodyne` (docs/global.md): a laminar fit from a start where
# the local fit stops in the wrong basin reaches the minimum with the same result on 1 and
# 2 ranks; the stage's diagnostics are in analysis_results_nlsq.json and run_report.yaml;
# SIGUSR1 during the search gives exit 75 and --resume (on the other rank count) the
# uninterrupted result; a bad cmaes value is bad input naming its key.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
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
  values: [100, 0.5, 0, 0.1, 0.2, 0.0, 1]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
    cmaes:
      enable: true
      nlsq_warmstart: false
      popsize: 12
      max_generations: 120
      max_restarts: 3
  streaming:
    checkpoint_frequency: 10
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 40 --angles "0,45,90,135" \
  --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 --param phi0=4 --noise 0.001 -q \
  || { echo "FAIL: synth"; exit 1; }

run() {  # run <ranks> <outdir> [args...]
  local n=$1 out=$2; shift 2
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$out" "$@"
}
# same <a> <b>: identical fitted values, chi2 and CMA-ES counts
same() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
def load(d):
    p = json.load(open(d + "/nlsq/parameters.json"))
    a = json.load(open(d + "/nlsq/analysis_results_nlsq.json"))
    v = {k: x["value"] for k, x in p["parameters"].items()}
    v["chi_squared"] = p["chi_squared"]
    g = a["global_search"]
    v.update({k: g[k] for k in ("evaluations", "generations", "restarts", "cmaes_chi_squared")})
    return v
a, b = load(sys.argv[1]), load(sys.argv[2])
diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
print("identical" if not diff else f"differ: {diff}")
sys.exit(0 if not diff else 1)
PY
}

# Every run has checkpoints on: the local solves then run in checkpoint segments, whose
# path differs in the last bits from one uninterrupted solve.
run 2 "$tmp/ref" --checkpoint-dir "$tmp/ck_ref" > "$tmp/ref.log" 2>&1 || { cat "$tmp/ref.log"; echo "FAIL: reference run"; exit 1; }
grep -q "CMA-ES: selected" "$tmp/ref.log" || { cat "$tmp/ref.log"; echo "FAIL: CMA-ES not selected"; exit 1; }
"$py" - "$tmp/ref" <<'PY' || { cat "$tmp/ref.log"; echo "FAIL: outputs"; exit 1; }
import json, sys, yaml
d = sys.argv[1]
a = json.load(open(d + "/nlsq/analysis_results_nlsq.json"))
g = a["global_search"]
assert g["selected"] == "cmaes_refined", g
assert g["restarts"] == 3 and g["restart_strategy"] == "bipop", g
assert g["seed"] == 42 and g["evaluations"] > 0, g
red = a["fit_quality"]["reduced_chi_squared"]
assert red < 0.05, red  # the minimum (noise 1e-3 with sigma 0.01), not the local fit's ~80
r = yaml.safe_load(open(d + "/run_report.yaml"))
assert r["global_search"]["selected"] == "cmaes_refined", r["global_search"]
assert r["config"]["seeds"]["cmaes"] == 42
print(f"reduced chi2 {red:.5g}, {g['evaluations']} evaluations")
PY
run 1 "$tmp/one" --checkpoint-dir "$tmp/ck_one" > /dev/null 2>&1 || { echo "FAIL: 1-rank run"; exit 1; }
echo -n "1 rank vs 2 ranks: "; same "$tmp/ref" "$tmp/one" || { echo "FAIL: rank counts differ"; exit 1; }

# SIGUSR1 at generation 50 (inside a run) → checkpoint, exit 75; resume on 1 rank.
out=$(HOMODYNE_SIGNAL_AT=cmaes_gen:50 run 2 "$tmp/s" --checkpoint-dir "$tmp/ckpt" 2>&1); code=$?
[ $code -eq 75 ] || { echo "$out"; echo "FAIL: SIGUSR1 exit code $code (expected 75)"; exit 1; }
ls "$tmp"/ckpt/*/cmaes_*.h5 > /dev/null 2>&1 || { ls -la "$tmp/ckpt"; echo "FAIL: no CMA-ES checkpoint"; exit 1; }
run 1 "$tmp/s" --checkpoint-dir "$tmp/ckpt" --resume > "$tmp/resume.log" 2>&1 \
  || { cat "$tmp/resume.log"; echo "FAIL: resume"; exit 1; }
grep -q "CMA-ES: resuming from" "$tmp/resume.log" || { cat "$tmp/resume.log"; echo "FAIL: not resumed"; exit 1; }
echo -n "SIGUSR1 at generation 50 + resume on 1 rank: "
same "$tmp/ref" "$tmp/s" || { echo "FAIL: resumed result differs"; exit 1; }

# Bad input names the key.
sed 's/      popsize: 12/      popsize: 2/' "$tmp/cfg.yaml" > "$tmp/bad.yaml"
out=$("$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/bad.yaml" --output-dir "$tmp/bad" 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; echo "FAIL: bad popsize exit $code (expected 2)"; exit 1; }
grep -q "optimization.nlsq.cmaes.popsize" <<<"$out" || { echo "$out"; echo "FAIL: key not named"; exit 1; }
echo "PASS"
