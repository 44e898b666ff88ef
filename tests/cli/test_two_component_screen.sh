#!/usr/bin/env bash
# The start screen of two-component fits from the template's start (docs/global.md): tb049 of
# the broad recovery study (bench/recovery/two_component_study.py --draws broad; a rising
# sample fraction, 4 angles with close pairs near 0 and 90 degrees, 125 frames). Without the
# screen every path from the transport scan's shared rate and from the registry's start
# crawled to max_iter or stalled, and the answer was `stalled` at 1.6x the truth start's chi2
# (exit 4). From the screen's point (a pair of decay rates, a sample fraction and a velocity
# fringe screened together, then short fits) the fit converges at the truth start's chi2, exit
# 0, and the other paths do not run. The screen is on by default; its chi2 grid sees every 7th
# row of each angle's triangle (125 frames / 16 rows), the same rows on any number of ranks, so
# the answer at 2 ranks has the bits of the answer at 1.
set -uo pipefail
bindir=$1; mpiexec=$2
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
truth="[889.3663792957777, -0.43466951483377525, 12.954138492611962, 2684.837187659498, 0.11447875366263782, 31.03516783610404, 746.9187591968879, 0.19876178361856978, -2.9629157694823736, 0.2973451498533318, 0.08402742117623628, 0.0, 0.04055209528821692, 0.14565831159984377]"
write_cfg "$tmp/truth.yaml" "$truth"
"$bindir/homodyne-synth" --config "$tmp/truth.yaml" -o "$tmp/g.h5" --frames 125 \
  --angles "8.8,14.4,98.4,101.4" --contrast 0.17140975994923469 --offset 0.9887741278001272 \
  --noise 0.0007597827304178852 --seed 907060011 -q || fail "synth"
write_cfg "$tmp/template.yaml" null
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/truth.yaml" -o "$tmp/truth" > "$tmp/truth.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/truth.log"; fail "truth fit exited $rc"; }
"$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/template.yaml" -o "$tmp/template" > "$tmp/template.log" 2>&1
rc=$?
read -r chi_t _ _ < <(result "$tmp/truth")
read -r chi_m st_m actions < <(result "$tmp/template")
echo "start screen: truth start chi2 $chi_t; template start $chi_m ($st_m, exit $rc)"
"$py" -c "import sys; t,a=map(float,sys.argv[1:3]); sys.exit(0 if a <= 1.001*t else 1)" \
  "$chi_t" "$chi_m" || fail "template start $chi_m ($st_m) vs truth $chi_t"
[ "$st_m" = converged ] && [ "$rc" -eq 0 ] || fail "the template start ended $st_m, exit $rc"
grep -q "start screen: the fit from its point ended converged at chi2 [0-9.e+]*: converged and no misfit" \
  <<<"$actions" || fail "no accepted start-screen answer (is the screen on by default?): $actions"
grep -q "start screen: chi2 of [0-9]* (D0_ref, D0_sample, v0, v_beta) points on every 7th row" \
  <<<"$actions" || fail "the screen's grid is not on every 7th row: $actions"
"$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/template.yaml" -o "$tmp/template2" > "$tmp/template2.log" 2>&1
rc2=$?
read -r chi_2 st_2 _ < <(result "$tmp/template2")
echo "2 ranks: $chi_2 ($st_2, exit $rc2)"
[ "$rc2" -eq 0 ] && [ "$chi_2" = "$chi_m" ] || fail "2 ranks gave $chi_2 ($st_2, exit $rc2), 1 rank $chi_m"
echo PASS
