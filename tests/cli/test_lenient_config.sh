#!/usr/bin/env bash
# Configs of homodyne's and xpcsjax's current and earlier templates and documentation carry
# keys homodyne-hpc does not know. As homodyne and xpcsjax do, a fit warns once, listing
# every ignored key (with the nearest valid key where one is close), and goes on; --strict
# refuses the config (exit 2) naming each key. ~ and ${VAR} in paths are expanded, and an
# end_frame beyond the file is a warning. Settings with no effect here are named in one warning
# line each, and fallback_to_all_angles: false is honoured.
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
  temporal: {dt: 0.2}
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
    trust_region_scale: 0.5
    x_scale_map: {D0: 1.0}
  cmc:
    diagonal_correction: true
  mcmc:
    enabled: true
multi_start:
  subsample_size: 1000
performance:
  computation: {gpu_acceleration: false}
  strategy_override: chunked
phi_filtering: {enabled: false, tolerance: 5.0}
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || fail "synth"

out=$(cd "$tmp" && "$mpiexec" -n 2 "$bindir/homodyne" --config cfg.yaml -o out 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; fail "a config with unknown keys: exit $code (expected 0)"; }
[ "$(grep -c "unknown key(s) ignored" <<<"$out")" -eq 1 ] || { echo "$out"; fail "the ignored keys are not listed once"; }
for key in optimization.nlsq.shear_transforms optimization.nlsq.fourier multi_start \
           optimization.mcmc.enabled; do
  grep -q "^ *$key (unknown key" <<<"$out" || { echo "$out"; fail "$key is not listed"; }
done
# Keys of homodyne's templates of 2025 that its later code does not read: accepted, no effect.
for key in optimization.cmc.diagonal_correction performance.computation.gpu_acceleration; do
  grep -q "^ *$key (unknown key" <<<"$out" && { echo "$out"; fail "$key is called unknown"; }
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

# Settings of homodyne/xpcsjax that change nothing here: one warning line each.
for w in "performance.strategy_override = chunked is not used" \
         "optimization.nlsq.trust_region_scale = 0.5 is not used" \
         "optimization.nlsq.x_scale_map is not used" \
         "phi_filtering.tolerance = 5 is not used"; do
  [ "$(grep -c "$w" <<<"$out")" -eq 1 ] || { echo "$out"; fail "not one line for: $w"; }
done

# phi_filtering.fallback_to_all_angles: false is honoured: no angle in the ranges is bad input.
sed -e 's/^phi_filtering:.*/phi_filtering: {enabled: true, fallback_to_all_angles: false, target_ranges: [{min_angle: 40, max_angle: 50}]}/' \
  "$tmp/cfg.yaml" > "$tmp/nofallback.yaml"
grep -q "fallback_to_all_angles: false" "$tmp/nofallback.yaml" || fail "nofallback config not written"
out=$(cd "$tmp" && "$mpiexec" -n 2 "$bindir/homodyne" --config nofallback.yaml -o nofb 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "fallback_to_all_angles: false with no angle in range: exit $code (expected 2)"; }
grep -q "phi_filtering.target_ranges.*fallback_to_all_angles is false\|fallback_to_all_angles is false" <<<"$out" || { echo "$out"; fail "no message naming fallback_to_all_angles"; }
sed -e 's/fallback_to_all_angles: false/fallback_to_all_angles: true/' "$tmp/nofallback.yaml" > "$tmp/fallback.yaml"
out=$(cd "$tmp" && "$mpiexec" -n 1 "$bindir/homodyne" --config fallback.yaml -o fb --max-iterations 3 2>&1); code=$?
{ [ $code -eq 0 ] || [ $code -eq 4 ]; } || { echo "$out"; fail "fallback_to_all_angles: true: exit $code"; }
grep -q "no angle lies in the target ranges; keeping all 2 angles" <<<"$out" || { echo "$out"; fail "fallback: no warning"; }

# --validate says where checkpoints would go (inside the output directory).
"$bindir/homodyne-config" --validate "$tmp/cfg.yaml" 2>/dev/null \
  | grep -q "checkpoints   : only on a stop signal; in <output dir>/checkpoints" \
  || fail "--validate does not say where checkpoints go"

out=$(cd "$tmp" && "$mpiexec" -n 1 "$bindir/homodyne" --config cfg.yaml -o strict --strict 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "--strict: exit $code (expected 2)"; }
grep -q "optimization.nlsq.shear_transforms: unknown key" <<<"$out" || { echo "$out"; fail "--strict does not name the key"; }
[ -e "$tmp/strict/nlsq/parameters.json" ] && fail "--strict wrote results"
echo "PASS"
