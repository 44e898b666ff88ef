#!/usr/bin/env bash
# Held parameters (initial_parameters.fixed_parameters / active_parameters) through the
# command line: a laminar_flow fit with D_offset and gamma_dot_t_offset fixed at 0 keeps them
# exactly there with uncertainty 0 and "vary": false, counts only the optimised parameters in
# the DOF, prints them as held, and gives the same bits at 1 and 2 ranks and streamed; the same held set by
# active_parameters gives the same answer; CMC (--method both) samples the others with them
# held; a checkpoint of another held set is not resumed (that run starts afresh).
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

write_cfg() {  # write_cfg <file> <initial_parameters lines>
  cat > "$1" <<YAML
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
  values: [12000, -0.3, 5, 0.002, 0.2, 0.0001, 2]
$2
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
  streaming:
    checkpoint_dir: $tmp/ckpt
    checkpoint_frequency: 1
YAML
}
write_cfg "$tmp/truth.yaml" ""
"$bindir/homodyne-synth" --config "$tmp/truth.yaml" -o "$tmp/data.h5" --frames 40 \
  --angles "0,45,90,135" --param D0=20000 --param alpha=-0.4 --param D_offset=0 \
  --param gamma_dot_t0=0.003 --param gamma_dot_t_offset=0 --param phi0=4 --noise 0.001 -q \
  || fail "synth"
write_cfg "$tmp/fixed.yaml" "  fixed_parameters: {D_offset: 0.0, gamma_dot_t_offset: 0.0}"
write_cfg "$tmp/active.yaml" "  active_parameters: [D0, alpha, gamma_dot_t0, beta, phi0]"
sed -i 's/values: \[12000, -0.3, 5, 0.002, 0.2, 0.0001, 2\]/values: [12000, -0.3, 0, 0.002, 0.2, 0, 2]/' \
  "$tmp/active.yaml"
write_cfg "$tmp/one.yaml" "  fixed_parameters: {D_offset: 0.0}"

values() {  # every parameter value, its uncertainty and vary flag, and chi2, one per line
  "$py" - "$1/nlsq/parameters.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d["parameters"].items():
    print(k, repr(v["value"]), repr(v["uncertainty"]), v.get("vary"))
print("chi_squared", repr(d["chi_squared"]))
PY
}

# 1. The fit at 2 ranks.
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/r2" 2>&1) \
  || { echo "$out"; fail "fit at 2 ranks"; }
grep -q "not honoured\|fitted, not held" <<<"$out" && fail "the run still warns that held parameters are fitted"
grep -Eq "D_offset +0 +\(held, not fitted\)" <<<"$out" || { echo "$out"; fail "summary does not show D_offset held"; }
"$py" - "$tmp/r2/nlsq" <<'PY' || fail "result files"
import json, sys
p = json.load(open(sys.argv[1] + "/parameters.json"))["parameters"]
a = json.load(open(sys.argv[1] + "/analysis_results_nlsq.json"))
held = ["D_offset", "gamma_dot_t_offset"]
for name in held:
    assert p[name]["value"] == 0.0 and p[name]["uncertainty"] == 0.0, (name, p[name])
    assert p[name]["vary"] is False, (name, p[name])
for name in ["D0", "alpha", "gamma_dot_t0", "beta", "phi0"]:
    assert p[name]["vary"] is True and p[name]["uncertainty"] > 0.0, (name, p[name])
assert abs(p["D0"]["value"] - 20000) < 0.05 * 20000, p["D0"]
q = a["fit_quality"]
assert q["held_parameters"] == held, q
# auto → averaged on 4 angles: homodyne counts the expanded vector (4 contrasts, 4 offsets,
# 7 physics), less the 2 held.
assert q["n_parameters"] == 2 * 4 + 7 - 2, q
# The fit's points (t = 0 not fitted; dataset_info counts homodyne's N² with it).
n_t = round(a["dataset_info"]["n_time_points"] ** 0.5) - 1
dof = a["dataset_info"]["n_angles"] * n_t * n_t - q["n_parameters"]
assert q["degrees_of_freedom"] == dof, (q, dof)
assert abs(q["reduced_chi_squared"] - q["chi_squared"] / dof) <= 1e-14 * q["reduced_chi_squared"], q
# A held parameter is never "at its bound", nor in the correlation analysis.
assert not [w for w in a["degeneracy"]["parameters_at_bounds"] if w.split()[0] in held], a
assert not set(held) & set(a["degeneracy"]["parameter_names"]), a["degeneracy"]["parameter_names"]
print("held exactly at 0 with sigma 0; DOF", dof)
PY

# 2. The same bits at 1 rank, and for the same held set given by active_parameters.
values "$tmp/r2" > "$tmp/r2.txt"
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/r1" -q > /dev/null 2>&1 \
  || fail "fit at 1 rank"
values "$tmp/r1" | diff - "$tmp/r2.txt" || fail "1 rank and 2 ranks differ"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/active.yaml" -o "$tmp/ra" -q > /dev/null 2>&1 \
  || fail "active_parameters fit"
values "$tmp/ra" | diff - "$tmp/r2.txt" || fail "active_parameters and fixed_parameters differ"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/rs" -q \
  --strategy streaming --memory-limit 1M > /dev/null 2>&1 || fail "streamed fit"
values "$tmp/rs" | diff - "$tmp/r2.txt" || fail "streamed and in-core differ"
echo "1 rank, streamed and active_parameters: identical to the 2-rank fixed_parameters fit"

# 3. CMC samples the others with the held ones at their values: they are not in the draws,
# their summary is the held value with std 0 and "vary": false, and the draws have the same
# bits at 1 and 2 ranks.
cmc=(--method both --n-warmup 100 --n-samples 100 --n-chains 2 --cmc-num-shards 2)
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/rc2" -q "${cmc[@]}" \
  > "$tmp/rc2.log" 2>&1 || { cat "$tmp/rc2.log"; fail "--method both at 2 ranks"; }
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/rc1" -q "${cmc[@]}" \
  > "$tmp/rc1.log" 2>&1 || { cat "$tmp/rc1.log"; fail "--method both at 1 rank"; }
"$py" - "$tmp/rc1/cmc" "$tmp/rc2/cmc" <<'PY' || fail "CMC with held parameters"
import h5py, json, sys
import numpy as np
one, two = sys.argv[1], sys.argv[2]
p = json.load(open(f"{two}/parameters.json"))["parameters"]
for n in ("D_offset", "gamma_dot_t_offset"):
    assert p[n]["mean"] == 0.0 and p[n]["std"] == 0.0 and p[n].get("vary") is False, (n, p[n])
for n in ("D0", "alpha", "gamma_dot_t0", "beta", "phi0"):
    assert p[n]["std"] > 0.0 and "vary" not in p[n], (n, p[n])
with h5py.File(f"{one}/samples.h5") as f1, h5py.File(f"{two}/samples.h5") as f2:
    names = f2.attrs["param_names"]
    names = (names.decode() if isinstance(names, bytes) else str(names)).split(",")
    assert "D_offset" not in names and "gamma_dot_t_offset" not in names, names
    assert "D0" in names and "phi0" in names, names
    assert np.array_equal(f1["samples"][()], f2["samples"][()]), "draws differ, 1 vs 2 ranks"
print("CMC: held at 0 with std 0;", len(names), "sampled coordinates; 1 and 2 ranks identical")
PY

# 4. Checkpoints: a resume with the same held set resumes, another held set is refused.
HOMODYNE_KILL_AT=nlsq_iter:2 "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/fixed.yaml" \
  -o "$tmp/rk" --checkpoint-dir "$tmp/ck" -q > /dev/null 2>&1 && fail "the kill did not happen"
ls "$tmp"/ck/*/nlsq_*.h5 > /dev/null 2>&1 || fail "no checkpoint before the kill"
# Another held set is another run: its own folder, a fresh fit (the answer of a plain run).
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/one.yaml" -o "$tmp/ro" \
  --checkpoint-dir "$tmp/ck" --resume 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; fail "resume with another held set: exit $code (expected 0)"; }
grep -q "resuming NLSQ from" <<<"$out" && { echo "$out"; fail "another held set's checkpoint was resumed"; }
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/one.yaml" -o "$tmp/ro_plain" -q > /dev/null 2>&1 \
  || fail "plain run of the other held set"
values "$tmp/ro" | diff - <(values "$tmp/ro_plain") || fail "the other held set's answer differs from a plain run"
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/fixed.yaml" -o "$tmp/rk" \
  --checkpoint-dir "$tmp/ck" --resume > "$tmp/resume.log" 2>&1 || { cat "$tmp/resume.log"; fail "resume"; }
grep -q "resuming NLSQ from" "$tmp/resume.log" || { cat "$tmp/resume.log"; fail "not resumed"; }
values "$tmp/rk" | diff - "$tmp/r2.txt" || fail "killed + resumed differs"
echo "PASS"
