# Shared by the start-screen tests (sourced): one broad-study dataset, the fit from its truth and
# from the template's start (values: null) at 1 rank, and the checks both tests make: the
# template start within 1.001x of the truth start's chi2, converged with exit 0, through the
# screen's accepted answer. The caller sets bindir, mpiexec, label, truth (the 14 values),
# frames, angles, contrast, offset, noise and seed; this leaves tmp, py, fail, write_cfg,
# result, rc, chi_t, chi_m, st_m and actions for the caller's own checks.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
names="[D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]"
write_cfg() {  # write_cfg <file> <values>
  cat > "$1" <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: g.h5
initial_parameters:
  parameter_names: $names
  values: $2
  fixed_parameters: {f2: 0.0}
YAML
}
result() {  # result <dir>: chi2, status and the recovery actions
  "$py" - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/nlsq/parameters.json"))
m = json.load(open(sys.argv[1] + "/nlsq/convergence_metrics.json"))
print(repr(d["chi_squared"]), d["convergence_status"], "|".join(m.get("recovery_actions") or []))
PY
}
write_cfg "$tmp/truth.yaml" "$truth"
"$bindir/homodyne-synth" --config "$tmp/truth.yaml" -o "$tmp/g.h5" --frames "$frames" \
  --angles "$angles" --contrast "$contrast" --offset "$offset" --noise "$noise" --seed "$seed" -q ||
  fail "synth"
write_cfg "$tmp/template.yaml" null
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/truth.yaml" -o "$tmp/truth" > "$tmp/truth.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/truth.log"; fail "truth fit exited $rc"; }
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/template.yaml" -o "$tmp/template" > "$tmp/template.log" 2>&1
rc=$?
read -r chi_t _ _ < <(result "$tmp/truth")
read -r chi_m st_m actions < <(result "$tmp/template")
echo "$label: truth start chi2 $chi_t; template start $chi_m ($st_m, exit $rc)"
"$py" -c "import sys; t,a=map(float,sys.argv[1:3]); sys.exit(0 if a <= 1.001*t else 1)" \
  "$chi_t" "$chi_m" || fail "template start $chi_m ($st_m) vs truth $chi_t"
[ "$st_m" = converged ] && [ "$rc" -eq 0 ] || fail "the template start ended $st_m, exit $rc"
grep -Eq "start screen: the fit from its point ended converged at (chi2|objective \([a-z_0-9]+\)) [0-9.e+]*: converged and no misfit" \
  <<<"$actions" || fail "no accepted start-screen answer (is the screen on by default?): $actions"
