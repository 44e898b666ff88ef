#!/usr/bin/env bash
# Robust losses (optimization.nlsq.loss, f_scale): on synthetic data with a few outliers, a
# fit with each loss minimises SciPy least_squares' objective f_scale^2·Σρ((d/f_scale)^2) on
# homodyne's residual vector d = c2_exp − c2_model (f_scale in c2 units; soft_l1 when the key
# is absent, as in homodyne): SciPy refits the same residuals
# (robust_loss_check.py, with a model written from docs/model.md) and lands on our
# parameters (1e-6 relative or 1e-3 of the uncertainty), static and laminar_flow; the plain
# χ² and the robust objective are both reported (the log's progress lines name the objective,
# and give the plain χ² beside the final one); the robust fit has the same bits at 1 and
# 2 ranks, 1 and 2 threads and after a checkpoint resume; TAO (bntr) agrees with SciPy too;
# the CMA-ES refinement takes cmaes.refinement_loss; two_component fits honour the loss: SciPy
# refits them too (two_component_loss_check.py, cauchy and the default soft_l1), the same bits at
# 1 and 2 ranks, an answer other than the linear one; a bad loss name is refused naming the key;
# the run report's recovery actions name the objective (chi2 only under the linear loss).
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
"$py" -c "import scipy, h5py, numpy" || fail "python3-scipy, h5py and numpy are needed"

# The data below carry outliers, which plain chi2 counts in full: a converged fit is then a
# misfit by the noise-based verdict (exit 5), whatever the loss; hd accepts that exit.
hd() { "$mpiexec" "$@"; local rc=$?; [ "$rc" -eq 5 ] && return 0; return "$rc"; }

write_cfg() {  # write_cfg <file> <mode> <loss> <f_scale> [more optimization.nlsq lines]
  local names values
  if [ "$2" = static ]; then
    names="[D0, alpha, D_offset]"; values="[15000, -0.3, 5]"
  else
    names="[D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]"
    values="[15000, -0.3, 5, 0.003, 0.1, 0.0001, 3]"
  fi
  cat > "$1" <<YAML
analysis_mode: $2
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data_$2.h5
initial_parameters:
  parameter_names: $names
  values: $values
optimization:
  nlsq:
    loss: $3
    f_scale: $4
    tolerance: 1e-14
    xtol: 1e-14
    gtol: 1e-12
    max_iterations: 300
    anti_degeneracy: {per_angle_mode: individual}
${5:-}
  streaming: {checkpoint_frequency: 1}
output: {fitted_data: model}
YAML
}

# Data: the model plus noise 0.001 and 2 % of the pairs shifted by +0.03: f_scale 0.003 is 3×
# the noise.
"$bindir/homodyne-synth" --config <(write_cfg /dev/stdout static linear 1) \
  -o "$tmp/data_static.h5" --frames 30 --angles "0,60,120" --param D0=20000 --param alpha=-0.4 \
  --param D_offset=10 --noise 0.001 --seed 3 -q || fail "synth static"
"$bindir/homodyne-synth" --config <(write_cfg /dev/stdout laminar_flow linear 1) \
  -o "$tmp/data_laminar_flow.h5" --frames 30 --angles "0,45,90,135" --param D0=20000 \
  --param alpha=-0.4 --param D_offset=10 --param gamma_dot_t0=0.004 --param beta=0.1 \
  --param gamma_dot_t_offset=0.0002 --param phi0=4 --noise 0.001 --seed 4 -q \
  || fail "synth laminar_flow"
"$py" - "$tmp/data_static.h5" "$tmp/data_laminar_flow.h5" <<'PY' || fail "outliers"
import sys
import h5py
import numpy as np
rng = np.random.default_rng(38)
for path in sys.argv[1:]:
    with h5py.File(path, "r+") as f:
        g = f["exchange/C2T_all"]
        for key in g:
            c = g[key][()]
            n = c.shape[0]
            i, j = np.triu_indices(n, 1)
            pick = rng.random(i.size) < 0.02
            c[i[pick], j[pick]] += 0.03
            g[key][...] = c
PY

values() {  # every parameter, its uncertainty, chi2 and the objective, one per line
  "$py" - "$1/nlsq" <<'PY'
import json, sys
p = json.load(open(sys.argv[1] + "/parameters.json"))
for k, v in p["parameters"].items():
    print(k, repr(v["value"]), repr(v["uncertainty"]))
for c in p["per_angle"]["contrast"] + p["per_angle"]["offset"]:
    print(repr(c["value"]), repr(c["uncertainty"]))
print("chi_squared", repr(p["chi_squared"]), repr(p["loss"]["objective_value"]))
PY
}

fs=0.003
for mode in static laminar_flow; do
  for loss in ${LOSSES:-soft_l1 huber cauchy arctan linear}; do
    write_cfg "$tmp/$mode-$loss.yaml" "$mode" "$loss" "$fs"
    out=$(hd -n 1 "$bindir/homodyne" --config "$tmp/$mode-$loss.yaml" \
      -o "$tmp/$mode-$loss" 2>&1) || { echo "$out"; fail "$mode $loss fit"; }
    if grep -q "MISFIT" <<<"$out" && [ "$loss" != linear ]; then
      grep -q "or outliers: the robust loss down-weighted them" <<<"$out" \
        || { echo "$out"; fail "a robust fit's misfit does not name outliers"; }
    fi
    if [ "$loss" = linear ]; then
      grep -q "loss              linear: the fit minimised chi2" <<<"$out" \
        || { echo "$out"; fail "summary: no linear loss line"; }
      grep -Eq "NLSQ: [0-9]+ iteration\(s\), chi2 " <<<"$out" \
        || { echo "$out"; fail "progress: the linear fit's line does not name chi2"; }
      grep -q "objective (" <<<"$out" && { echo "$out"; fail "a linear fit's log names a loss objective"; }
    else
      grep -q "loss              $loss, f_scale $fs (c2 units): the fit minimised" <<<"$out" \
        || { echo "$out"; fail "summary: no $loss line"; }
      # The progress lines name the objective minimised, never chi2, and the plain chi2 is
      # logged beside the final objective.
      grep -Eq "NLSQ: [0-9]+ iteration\(s\), objective \($loss\) " <<<"$out" \
        || { echo "$out"; fail "progress: the $loss fit's line does not name its objective"; }
      grep -Eq "NLSQ: [0-9]+ iteration\(s\), chi2 " <<<"$out" \
        && { echo "$out"; fail "progress: the $loss objective called chi2"; }
      grep -Eq "NLSQ: objective \($loss\) [^;]+ at the answer; plain chi2 [0-9.e+-]+ \(reduced " \
        <<<"$out" || { echo "$out"; fail "no plain chi2 beside the $loss objective"; }
    fi
    "$py" "$(dirname "$0")/robust_loss_check.py" "$tmp/$mode-$loss" "$mode" "$loss" "$fs" \
      0.1 2000000 || fail "$mode $loss: SciPy disagrees"
    if [ "$mode" = laminar_flow ]; then
      # The run report's recovery actions (the phi0 check runs on every laminar fit with phi0
      # free) name the value the fits minimised: chi2 under the linear loss only.
      acts=$(sed -n '/^recovery_actions:/,/^[a-z_]*:/p' "$tmp/$mode-$loss/run_report.yaml")
      grep -q "phi0 check" <<<"$acts" || { echo "$acts"; fail "$mode $loss: no phi0 check action"; }
      if [ "$loss" = linear ]; then
        grep -q "than chi2 [0-9]" <<<"$acts" \
          || { echo "$acts"; fail "the linear fit's actions do not name chi2"; }
      else
        grep -Eq "chi2 [0-9]" <<<"$acts" \
          && { echo "$acts"; fail "the $loss fit's report actions call its objective chi2"; }
        grep -q "objective ($loss) [0-9]" <<<"$acts" \
          || { echo "$acts"; fail "the $loss fit's report actions do not name its objective"; }
      fi
    fi
  done
  # Bits: 2 ranks, and 2 threads per rank.
  values "$tmp/$mode-soft_l1" > "$tmp/$mode.1.txt"
  hd -n 2 "$bindir/homodyne" --config "$tmp/$mode-soft_l1.yaml" -o "$tmp/$mode-r2" -q \
    > /dev/null 2>&1 || fail "$mode soft_l1 at 2 ranks"
  values "$tmp/$mode-r2" | diff - "$tmp/$mode.1.txt" || fail "$mode: 1 and 2 ranks differ"
  hd -n 1 "$bindir/homodyne" --config "$tmp/$mode-soft_l1.yaml" -o "$tmp/$mode-t2" -q \
    --threads 2 > /dev/null 2>&1 || fail "$mode soft_l1 at 2 threads"
  values "$tmp/$mode-t2" | diff - "$tmp/$mode.1.txt" || fail "$mode: 1 and 2 threads differ"
  echo "$mode: 1 rank, 2 ranks, 2 threads identical"
done

# A robust fit killed after two iterations and resumed from its checkpoint has the bits of
# the uninterrupted one.
HOMODYNE_KILL_AT=nlsq_iter:2 "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/static-soft_l1.yaml" \
  -o "$tmp/static-kill" --checkpoint-dir "$tmp/ck" -q > /dev/null 2>&1 && fail "the kill did not happen"
ls "$tmp/ck"/*/nlsq_*.h5 > /dev/null 2>&1 || fail "no checkpoint before the kill"
out=$(hd -n 1 "$bindir/homodyne" --config "$tmp/static-soft_l1.yaml" \
  -o "$tmp/static-kill" --checkpoint-dir "$tmp/ck" --resume 2>&1) || { echo "$out"; fail "resume"; }
grep -q "resuming NLSQ from" <<<"$out" || { echo "$out"; fail "not resumed"; }
values "$tmp/static-kill" | diff - "$tmp/static.1.txt" || fail "resumed and uninterrupted differ"
echo "static soft_l1: resumed from a checkpoint, identical"

# TAO (bntr) minimises the same robust objective.
write_cfg "$tmp/static-tao.yaml" static huber "$fs" "    local_solver: bntr"
hd -n 1 "$bindir/homodyne" --config "$tmp/static-tao.yaml" -o "$tmp/static-tao" -q \
  > /dev/null 2>&1 || fail "TAO huber fit"
"$py" "$(dirname "$0")/robust_loss_check.py" "$tmp/static-tao" static huber "$fs" 0.1 2000000 \
  || fail "TAO: SciPy disagrees"
# CMA-ES: the refinement minimises cmaes.refinement_loss; the answer is reported under the
# fit's loss (objective checked by SciPy's formula, no refit: the refined point minimises the
# other loss).
write_cfg "$tmp/static-cmaes.yaml" static cauchy "$fs" "    cmaes:
      enable: true
      nlsq_warmstart: false
      popsize: 8
      max_generations: 30
      refinement_loss: soft_l1"
out=$(hd -n 1 "$bindir/homodyne" --config "$tmp/static-cmaes.yaml" -o "$tmp/static-cmaes" \
  2>&1) || { echo "$out"; fail "CMA-ES fit"; }
grep -q "the refinement minimises the soft_l1 (C 1 on the sigma-scaled residual) loss" <<<"$out" \
  || { echo "$out"; fail "CMA-ES: the refinement does not take refinement_loss"; }
"$py" "$(dirname "$0")/robust_loss_check.py" "$tmp/static-cmaes" static cauchy "$fs" 0.1 2000000 \
  --no-refit || fail "CMA-ES: objective or chi2"
# The global search's values keep homodyne's *_chi_squared names; both outputs say that they
# hold the cauchy objective.
grep -A40 "^global_search:" "$tmp/static-cmaes/run_report.yaml" \
  | grep -q "chi_squared_fields_hold: the cauchy objective" \
  || fail "run report: the global search does not say its values are the cauchy objective"
"$py" - "$tmp/static-cmaes/nlsq/analysis_results_nlsq.json" <<'PY' || fail "analysis results"
import json, sys
g = json.load(open(sys.argv[1]))["global_search"]
assert g["chi_squared_fields_hold"].startswith("the cauchy objective"), g
PY

# two_component: the same loss through its own kernel; SciPy refits the same residuals
# (two_component_loss_check.py, with a model written from the heterodyne spec and checked
# against tests/data/reference_heterodyne.json) and lands on our answer, for cauchy (averaged
# and individual scaling) and for the default soft_l1, f_scale 1 (individual scaling inside
# xpcsjax's contrast bounds); the same bits at 1 and 2 ranks, the objective below the plain chi2, and an answer
# other than the linear fit's.
het_cfg() {  # het_cfg <file> <loss> [more optimization.nlsq entries]
  cat > "$1" <<YAML
analysis_mode: two_component
analyzer_parameters: {dt: 0.1, scattering: {wavevector_q: 0.0054}}
experimental_data: {data_folder_path: $tmp, data_file_name: het.h5}
initial_parameters:
  parameter_names: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]
  values: [3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.3, 0.0, 0.05, 2.0]
  active_parameters: [D0_ref, alpha_ref, D0_sample, alpha_sample, v0, v_beta, f0, f1, phi0_het]
optimization:
  nlsq: {loss: $2, f_scale: 0.005, tolerance: 1e-14, xtol: 1e-14, gtol: 1e-12, max_iterations: 300${3:-}}
output: {fitted_data: model}
YAML
}
het_cfg "$tmp/het-truth.yaml" linear
"$bindir/homodyne-synth" --config "$tmp/het-truth.yaml" -o "$tmp/het.h5" --frames 30 \
  --angles "0,60,120" --noise 0.002 --seed 7 -q || fail "two_component synth"
"$py" - "$tmp/het.h5" <<'PY' || fail "two_component outliers"
import sys
import h5py
import numpy as np
rng = np.random.default_rng(5)
with h5py.File(sys.argv[1], "r+") as f:
    for key in f["exchange/C2T_all"]:
        d = f["exchange/C2T_all"][key]
        c = d[()]
        i, j = np.triu_indices(c.shape[0], 1)
        pick = rng.random(i.size) < 0.02
        c[i[pick], j[pick]] += 0.05
        d[...] = c
PY
het_cfg "$tmp/het-cauchy.yaml" cauchy
het_cfg "$tmp/het-linear.yaml" linear
het_cfg "$tmp/het-cauchyind.yaml" cauchy ", anti_degeneracy: {per_angle_mode: individual}"
# No loss key (soft_l1, f_scale 1) and one contrast and offset per angle.
het_cfg "$tmp/het-default.yaml" soft_l1 ", anti_degeneracy: {per_angle_mode: individual}"
sed -i -e 's/loss: soft_l1, f_scale: 0.005, //' "$tmp/het-default.yaml"
grep -q "loss:\|f_scale:" "$tmp/het-default.yaml" && fail "the two_component default config sets the loss"
for run in "1 cauchy" "2 cauchy" "1 linear" "1 cauchyind" "1 default"; do
  set -- $run
  hd -n "$1" "$bindir/homodyne" --config "$tmp/het-$2.yaml" -o "$tmp/het-$2-$1" -q \
    > /dev/null 2>&1 || fail "two_component $2 at $1 rank(s)"
done
"$py" "$(dirname "$0")/two_component_loss_check.py" "$tmp/het-cauchy-1" cauchy 0.005 0.1 \
  || fail "two_component cauchy: SciPy disagrees"
"$py" "$(dirname "$0")/two_component_loss_check.py" "$tmp/het-cauchyind-1" cauchy 0.005 0.1 \
  || fail "two_component cauchy, individual scaling: SciPy disagrees"
"$py" "$(dirname "$0")/two_component_loss_check.py" "$tmp/het-default-1" soft_l1 1 0.1 \
  || fail "two_component default loss: not SciPy's soft_l1 with f_scale 1"
values "$tmp/het-cauchy-2" | diff - <(values "$tmp/het-cauchy-1") \
  || fail "two_component cauchy: 1 and 2 ranks differ"
"$py" - "$tmp/het-cauchy-1" "$tmp/het-linear-1" <<'PY' || fail "two_component robust result"
import json, sys
rob = json.load(open(sys.argv[1] + "/nlsq/parameters.json"))
lin = json.load(open(sys.argv[2] + "/nlsq/parameters.json"))
l = rob["loss"]
assert l["loss"] == "cauchy" and l["f_scale"] == 0.005, l
assert l["objective_value"] < 0.5 * rob["chi_squared"], (l, rob["chi_squared"])
assert lin["loss"]["objective_value"] == lin["chi_squared"], lin["loss"]
moved = max(abs(rob["parameters"][k]["value"] - lin["parameters"][k]["value"]) /
            max(lin["parameters"][k]["uncertainty"], 1e-300) for k in ("D0_ref", "v0", "f0"))
assert moved > 0.5, ("the robust answer is the linear one", moved)
print("two_component cauchy: objective", l["objective_value"], "chi2", rob["chi_squared"])
PY

# Every result file states the loss; the run report too.
"$py" - "$tmp/static-cauchy" <<'PY' || fail "result files"
import json, sys
d = sys.argv[1]
for name in ["nlsq/parameters.json", "nlsq/analysis_results_nlsq.json",
             "nlsq/convergence_metrics.json", "homodyne_results.json"]:
    l = json.load(open(f"{d}/{name}"))["loss"]
    assert l["loss"] == "cauchy" and l["f_scale"] == 0.003, (name, l)
    assert "rho_cauchy" in l["objective_minimised"], (name, l)
PY
grep -rq "objective_minimised" "$tmp/static-cauchy"/*.yaml "$tmp/static-cauchy"/*/*.yaml 2>/dev/null \
  || fail "run report has no loss block"

# No loss key: homodyne's default, soft_l1 with f_scale 1 (c2 units), as SciPy fits it; on
# residuals of 1e-3 it is within a few parts in a million of the linear objective.
write_cfg "$tmp/default.yaml" static soft_l1 1
sed -i -e '/^    loss: /d' -e '/^    f_scale: /d' "$tmp/default.yaml"
grep -q "loss:" "$tmp/default.yaml" && fail "the default config still sets the loss"
hd -n 1 "$bindir/homodyne" --config "$tmp/default.yaml" -o "$tmp/static-default" -q \
  > /dev/null 2>&1 || fail "default-loss fit"
"$py" "$(dirname "$0")/robust_loss_check.py" "$tmp/static-default" static soft_l1 1 0.1 2000000 \
  || fail "default loss: not SciPy's soft_l1 with f_scale 1"

# A bad name is refused, naming the key and the valid values.
write_cfg "$tmp/bad.yaml" static L1 1
out=$("$bindir/homodyne" --config "$tmp/bad.yaml" -o "$tmp/bad" 2>&1) && fail "bad loss accepted"
grep -q "optimization.nlsq.loss" <<<"$out" && grep -q "soft_l1" <<<"$out" \
  || { echo "$out"; fail "the error does not name the key and the values"; }
write_cfg "$tmp/bad.yaml" static soft_l1 0
out=$("$bindir/homodyne" --config "$tmp/bad.yaml" -o "$tmp/bad" 2>&1) && fail "f_scale 0 accepted"
grep -q "f_scale" <<<"$out" || { echo "$out"; fail "the error does not name f_scale"; }
echo "PASS"
