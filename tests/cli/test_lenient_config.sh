#!/usr/bin/env bash
# Configs of homodyne's and xpcsjax's current and earlier templates and documentation carry
# keys homodyne-hpc does not know. As homodyne and xpcsjax do, a fit warns once, listing
# every ignored key (with the nearest valid key where one is close), and goes on; --strict
# refuses the config (exit 2) naming each key. ~ and ${VAR} in paths are expanded, and an
# end_frame beyond the file is a warning.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export HOMODYNE_TEST_DATA_ROOT=$tmp

cat > "$tmp/cfg.yaml" <<'YAML'
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  end_frame: 500
  scattering: {wavevector_q: 0.0054}
  temporal: {dt: 0.1}
experimental_data:
  data_folder_path: ${HOMODYNE_TEST_DATA_ROOT}
  data_file_name: data.h5
parameter_bounds: {D0: [1, 1000000]}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [10000, -0.5, 0]
optimization:
  nlsq:
    shear_transforms: {enable: false}
    fourier: {order: 2}
  cmc:
    diagonal_correction: true
  mcmc:
    enabled: true
multi_start:
  subsample_size: 1000
performance:
  computation: {gpu_acceleration: false}
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || fail "synth"

out=$(cd "$tmp" && "$mpiexec" -n 2 "$bindir/homodyne" --config cfg.yaml -o out 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; fail "a config with unknown keys: exit $code (expected 0)"; }
[ "$(grep -c "unknown key(s) ignored" <<<"$out")" -eq 1 ] || { echo "$out"; fail "the ignored keys are not listed once"; }
for key in optimization.nlsq.shear_transforms optimization.nlsq.fourier \
           optimization.cmc.diagonal_correction multi_start performance.computation.gpu_acceleration \
           optimization.mcmc.enabled; do
  grep -q "^ *$key (unknown key" <<<"$out" || { echo "$out"; fail "$key is not listed"; }
done
grep -q "metadata.diagonal_correction" <<<"$out" && { echo "$out"; fail "a suggestion from another section"; }
grep -q "optimization.nlsq.diagnostics.enabled" <<<"$out" && { echo "$out"; fail "a suggestion from a sibling section"; }
# xpcsjax's temporal block and parameter_bounds are read under today's keys, with a line each.
grep -q "config: analyzer_parameters.temporal.dt (xpcsjax) not read: analyzer_parameters.dt is also given and wins" <<<"$out" \
  || { echo "$out"; fail "no note for analyzer_parameters.temporal.dt"; }
grep -q "config: parameter_bounds (xpcsjax's documentation) read as parameter_space.bounds: D0" <<<"$out" \
  || { echo "$out"; fail "parameter_bounds not read"; }
grep -q "^ *\(analyzer_parameters.temporal\|parameter_bounds\) (unknown key" <<<"$out" && { echo "$out"; fail "a read key is listed as unknown"; }
grep -q "end_frame 500 is beyond the file's 30 frames" <<<"$out" || { echo "$out"; fail "no warning for end_frame"; }
[ "$(grep -c "layout, 2 angle(s)" <<<"$out")" -le 1 ] || { echo "$out"; fail "the file line is printed twice"; }
[ -e "$tmp/out/nlsq/parameters.json" ] || fail "no results"

# --validate says where checkpoints would go (inside the output directory).
"$bindir/homodyne-config" --validate "$tmp/cfg.yaml" 2>/dev/null \
  | grep -q "checkpoints   : only on a stop signal; in <output dir>/checkpoints" \
  || fail "--validate does not say where checkpoints go"

out=$(cd "$tmp" && "$mpiexec" -n 1 "$bindir/homodyne" --config cfg.yaml -o strict --strict 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "--strict: exit $code (expected 2)"; }
grep -q "optimization.nlsq.shear_transforms: unknown key" <<<"$out" || { echo "$out"; fail "--strict does not name the key"; }
[ -e "$tmp/strict/nlsq/parameters.json" ] && fail "--strict wrote results"
echo "PASS"
