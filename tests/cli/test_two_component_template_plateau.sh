#!/usr/bin/env bash
# The xpcsjax two-component template as users copy it (its own tolerance/xtol/gtol of 1e-6,
# `values: null`), pointed at a synthetic 4-angle set (phi 0, 5, 88, 92; slow reference, fast
# sample, v0 = 5, constant fraction 0.4, every other physical parameter 0), at 2 ranks, with
# 80 and with 150 frames.
# - 80 frames. Before: the velocity scan's local fits made 0 iterations (their steps clipped
#   v0 to 0, where the model stops responding to it, and every step was rejected) and the
#   answer was a stall at 1.07x the minimum. Now the scan's local fits start from their own
#   fitted scaling, and one of them reaches the minimum.
# - 150 frames. Before: every path started from the registry's shared rate D0 = 1e4, which at
#   q = 0.0237 decays within 2 frames; every local fit ended where the sample has decayed
#   within a frame (chi2 184541 against the minimum's 3496, 53x the noise floor: a MISFIT,
#   exit 5, after 2 minutes). Now the transport scan starts every path from the grid rate of
#   lowest chi2.
# In both the answer must be within 1.001x of the fit from the truth (default settings),
# labelled converged with exit 0 or stalled with exit 4. An answer labelled converged with exit 0 away from it fails
# first, with its own message.
set -uo pipefail
bindir=$(cd "$1" && pwd); mpiexec=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
names="[D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]"
template=$src/tests/data/configs/xpcsjax/xpcsjax_two_component.yaml
grep -q '^    tolerance: 1.0e-6' "$template" || fail "the template's tolerance is no longer 1e-6"

result() {  # result <dir>: chi2 and status
  "$py" - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/nlsq/parameters.json"))
print(repr(d["chi_squared"]), d["convergence_status"])
PY
}
within() {  # within <chi2> <reference>: chi2 <= 1.001 x reference
  "$py" -c "import sys; a,t=map(float,sys.argv[1:3]); sys.exit(0 if a <= 1.001*t else 1)" "$1" "$2"
}

run_case() {  # run_case <frames>: leaves chi_ref, chi, st, rc and the logs in $tmp/<frames>
  local frames=$1 dir=$tmp/$1
  mkdir -p "$dir"
  cat > "$dir/truth.yaml" <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0237}
experimental_data:
  data_folder_path: $dir
  data_file_name: het.h5
initial_parameters:
  parameter_names: $names
  values: [50, 0, 0, 300, 0, 0, 5, 0, 0, 0.4, 0, 0, 0, 0]
YAML
  "$bindir/homodyne-synth" --config "$dir/truth.yaml" -o "$dir/het.h5" --frames "$frames" \
    --angles "0,5,88,92" --contrast 0.5 --offset 1 --noise 0.002 --seed 1 -q ||
    fail "$frames frames: synth"
  # The template, unchanged but for the data path.
  sed -e "s#data_folder_path: \"./data/\"#data_folder_path: \"$dir/\"#" \
      -e 's#data_file_name: "sample_heterodyne.hdf"#data_file_name: "het.h5"#' \
      "$template" > "$dir/template.yaml"
  grep -q "data_file_name: \"het.h5\"" "$dir/template.yaml" || fail "template data path not set"

  (cd "$dir" && "$mpiexec" -n 1 "$bindir/homodyne" --config truth.yaml -o ref > ref.log 2>&1)
  rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 4 ] || { cat "$dir/ref.log"; fail "$frames frames: truth fit exited $rc"; }
  read -r chi_ref st_ref < <(result "$dir/ref")

  # The template writes checkpoints into ./checkpoints: run it inside the case's directory.
  (cd "$dir" && "$mpiexec" -n 2 "$bindir/homodyne" --config template.yaml -o out > out.log 2>&1)
  rc=$?
  if [ -f "$dir/out/nlsq/parameters.json" ]; then
    read -r chi st < <(result "$dir/out")
  else
    chi=nan st=none
  fi
  echo "$frames frames: truth start: chi2 $chi_ref ($st_ref); template: chi2 $chi ($st, exit $rc)"
  grep -E "transport scan:|velocity scan: from" "$dir/out.log" | grep -v "^ "
  # Every answer labelled converged with exit 0 must be the minimum.
  if [ "$st" = converged ] && [ "$rc" -eq 0 ]; then
    within "$chi" "$chi_ref" ||
      fail "$frames frames: template labelled converged (exit 0) at chi2 $chi, the minimum is $chi_ref"
  fi
  # The outcome itself: the minimum, labelled converged, exit 0.
  within "$chi" "$chi_ref" || {
    grep -E "verdict|^    - " "$dir/out.log"
    fail "$frames frames: template chi2 $chi ($st, exit $rc) is above 1.001x the minimum $chi_ref"
  }
  # At the minimum the label must be earned: converged with exit 0, or (the issue's "a
  # non-zero exit that says why") stalled with exit 4 where the paths' lowest answer lies in
  # the valley's flat floor below a converged one (150 frames: 3495.90 against 3496.04).
  if [ "$st" = converged ]; then
    [ "$rc" -eq 0 ] || fail "$frames frames: converged at the minimum but exit $rc"
  else
    [ "$st" = stalled ] && [ "$rc" -eq 4 ] ||
      fail "$frames frames: template reached the minimum but ended $st, exit $rc"
    grep -q "stalled" "$dir/out.log" || fail "$frames frames: exit 4 without a stall in the log"
    echo "$frames frames: at the minimum, labelled stalled (exit 4)"
  fi
}

# The start screen (docs/global.md) runs first; when its answer is taken the paths below it
# do not run, and the checks of those paths do not apply (the minimum is checked above).
screen_taken() {
  grep -Eq "start screen: the fit from its point ended converged at (chi2|objective \([a-z_0-9]+\)) [0-9.e+]*: converged and no misfit" \
    "$tmp/$1/out.log"
}
run_case 80
# The template writes hierarchical.enable: true. After a converged plain fit two_component's
# stages do not run, even with v_beta converged at its bound (docs/global.md): here they took
# 9693 of the job's 10656 data passes and kept the plain answer.
if [ "$st" = converged ]; then
  ! grep -q "two-stage path: stage 1" "$tmp/80/out.log" ||
    fail "80 frames: the two-stage path ran after a converged plain fit"
  grep -q "inactive_reason: \"the plain fit converged (hierarchical.trigger: suspect; two_component" \
    "$tmp/80/out/run_report.yaml" || fail "80 frames: the report does not say why the stages were skipped"
  grep -q "anti-degeneracy   not run: the plain fit converged" "$tmp/80/out.log" ||
    fail "80 frames: the summary does not say why the stages were skipped"
fi
# The report's phases account for the session's time: the start screen's grids and rankings
# between the solves are in "fit" (they were in no phase: fit 0.3 s of a 2.3 s session).
"$py" - "$tmp/80/out" <<'PY' || fail "80 frames: the report's phases do not add up to the session's time"
import json, sys, yaml
d = sys.argv[1]
t = yaml.safe_load(open(d + "/run_report.yaml"))["timing_seconds"]
session = json.load(open(d + "/nlsq/convergence_metrics.json"))["convergence"]["execution_time"]
timed = sum(t[p]["max"] for p in ("load", "setup", "initial_scaling", "noise_level", "fit", "cmaes")
            if p in t)
print(f"80 frames: phases {timed:.3f} s of the session's {session:.3f} s")
sys.exit(0 if timed >= 0.9 * session else 1)
PY
if screen_taken 80; then
  echo "80 frames: the start screen's answer was taken"
else
# 80 frames: the minimum is reached through the velocity scan's local fits. The log names the
# template's objective (soft_l1, f_scale 1 in c2 units: within 1e-6 of chi2 at residuals of the
# noise, so it compares with the reference's chi2).
best_scan=$(grep -oE "velocity scan: from v0 [^:]*: [a-z_]* at (chi2|objective \(soft_l1\)) [0-9.e+]*" \
  "$tmp/80/out.log" |
  awk '{print $NF}' | sort -g | head -1)
[ -n "$best_scan" ] || fail "80 frames: no velocity-scan local fit in the log"
within "$best_scan" "$chi_ref" ||
  fail "80 frames: no velocity-scan local fit reached the minimum (best $best_scan)"
fi

# Streamed (docs/streaming.md): the screens and scans run on row subsets read once and kept in
# memory, as in core, so the streamed job makes the in-core job's choices (the same chi2 bits,
# label and exit) and reads the file only for the passes over all points. Before, a streamed
# job screened on every row, read the file for each screen pass (883 reads against 961 passes
# in core), and could choose differently.
mkdir -p "$tmp/80/streamed"
cp "$tmp/80/template.yaml" "$tmp/80/streamed/"
(cd "$tmp/80/streamed" && "$mpiexec" -n 2 "$bindir/homodyne" --config template.yaml -o out \
  --strategy streaming > out.log 2>&1)
rc_streamed=$?
read -r chi_streamed st_streamed < <(result "$tmp/80/streamed/out")
echo "80 frames streamed: chi2 $chi_streamed ($st_streamed, exit $rc_streamed)"
[ "$chi_streamed" = "$chi" ] && [ "$st_streamed" = "$st" ] && [ "$rc_streamed" -eq "$rc" ] ||
  fail "80 frames: streamed chi2 $chi_streamed ($st_streamed, exit $rc_streamed), in core $chi ($st, exit $rc)"
"$py" - "$tmp/80/streamed/out" "$tmp/80/out" <<'PY' ||
import sys, yaml
def passes(d):
    return yaml.safe_load(open(d + "/run_report.yaml"))["throughput"]["passes"]
s, c = passes(sys.argv[1]), passes(sys.argv[2])
rows = s["by_kind"]["row_subset"]
print(f"80 frames: streamed {s['total']} passes, {s['stream_reads']} reads of the file, {rows} on "
      f"rows in memory; in core {c['total']} passes, {c['by_kind']['row_subset']} on rows")
sys.exit(0 if rows == c["by_kind"]["row_subset"] and rows > 0 and
         s["stream_reads"] == s["total"] - rows else 1)
PY
  fail "80 frames: the streamed job did not screen on the in-core job's rows kept in memory"

run_case 150
if screen_taken 150; then
  echo "150 frames: the start screen's answer was taken"
else
# 150 frames: every path starts from the transport scan's rate, not the registry's 1e4.
grep -q "transport scan: .*where the paths start first" "$tmp/150/out.log" ||
  fail "150 frames: the transport scan did not replace the registry's rate"
fi
echo PASS
