#!/usr/bin/env bash
# nlsq/fitted_data.h5 at 1 and at 2 ranks holds the same datasets, attributes and values (h5diff
# finds no difference): at 2 ranks every rank writes its own angles into the one file (parallel
# HDF5), compressed or not, and no temporary is left beside it. nlsq/fitted_data.npz, whose
# slabs every rank writes in place too, is the same file at 1 and 2 ranks, byte for byte.
set -uo pipefail
bindir=$1; mpiexec=$2
command -v h5diff > /dev/null || { echo "SKIP: no h5diff"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
config() {  # $1 = the output section
  cat <<YAML
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
    max_iterations: 20
    recovery: {on_stall: none, phi0_restarts: 0}
    anti_degeneracy: {per_angle_mode: individual, hierarchical: {enable: false}}
$1
YAML
}
config "output: {fitted_data: full}" > "$tmp/full.yaml"
config "output: {fitted_data: full, compress_hdf5: true}" > "$tmp/deflate.yaml"
# Five angles: more than the ranks and not a multiple of 2 (rank 0 writes one more).
"$bindir/homodyne-synth" --config "$tmp/full.yaml" -o "$tmp/data.h5" --frames 48 \
  --angles "-60,-20,10,45,100" --param D0=20000 --param alpha=-0.4 --param gamma_dot_t0=0.003 \
  --param phi0=4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }

fit() {  # $1 = ranks, $2 = config, $3 = output directory
  "$mpiexec" -n "$1" "$bindir/homodyne" --config "$2" --output-dir "$3" --threads 1 -q \
    > "$3.log" 2>&1 || { cat "$3.log"; echo "FAIL: fit at $1 rank(s) with $2"; exit 1; }
  [ -s "$3/nlsq/fitted_data.h5" ] || { echo "FAIL: no $3/nlsq/fitted_data.h5"; exit 1; }
  if ls -A "$3/nlsq" | grep -q 'tmp'; then
    echo "FAIL: a temporary left in $3/nlsq: $(ls -A "$3/nlsq")"; exit 1
  fi
}
fit 1 "$tmp/full.yaml" "$tmp/one"
fit 2 "$tmp/full.yaml" "$tmp/two"
fit 2 "$tmp/deflate.yaml" "$tmp/two_deflate"
# The fit itself is rank-count invariant: the same parameters at 1 and 2 ranks (all but the
# file's timestamp).
/usr/bin/python3 - "$tmp/one/nlsq/parameters.json" "$tmp/two/nlsq/parameters.json" <<'PY' ||
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a.pop("timestamp", None)
b.pop("timestamp", None)
assert a == b, "parameters differ"
PY
  { echo "FAIL: parameters differ between 1 and 2 ranks"; exit 1; }
for other in two two_deflate; do
  if ! h5diff -r "$tmp/one/nlsq/fitted_data.h5" "$tmp/$other/nlsq/fitted_data.h5" > "$tmp/diff.txt"; then
    head -20 "$tmp/diff.txt"
    echo "FAIL: fitted_data.h5 at 2 ranks ($other) differs from 1 rank's"; exit 1
  fi
done
# h5diff compares what both files hold: the datasets and the root attributes are all there.
for name in c2_exp c2_theoretical_raw c2_theoretical_scaled c2_solver_scaled residuals \
            residuals_normalized per_angle_scaling per_angle_scaling_solver t1 t2 q phi_angles; do
  h5ls "$tmp/two/nlsq/fitted_data.h5/$name" > /dev/null 2>&1 ||
    { echo "FAIL: /$name missing at 2 ranks"; exit 1; }
done
attrs=$(h5dump -A -g / "$tmp/two/nlsq/fitted_data.h5" | grep -c 'ATTRIBUTE "\(analysis_mode\|source\|fitted_data\)"')
[ "$attrs" -eq 3 ] || { echo "FAIL: root attributes at 2 ranks: $attrs of 3"; exit 1; }
# fitted_data.npz follows the same keys: stored (numpy.savez) by default, deflated with
# compress_hdf5 (numpy.savez_compressed); numpy.load reads the same arrays from both.
/usr/bin/python3 - "$tmp/two/nlsq/fitted_data.npz" "$tmp/two_deflate/nlsq/fitted_data.npz" <<'PY' ||
import sys, zipfile
import numpy as np
plain, deflated = sys.argv[1:3]
# Every member's CRC-32 checked (the stored archive's are combined from the ranks' slabs).
for name in (plain, deflated):
    assert zipfile.ZipFile(name).testzip() is None, name
assert {i.compress_type for i in zipfile.ZipFile(plain).infolist()} == {zipfile.ZIP_STORED}
assert {i.compress_type for i in zipfile.ZipFile(deflated).infolist()} == {zipfile.ZIP_DEFLATED}
a, b = np.load(plain), np.load(deflated)
assert a.files == b.files and "c2_exp" in a.files, (a.files, b.files)
for k in a.files:
    assert np.array_equal(a[k], b[k]), k
PY
  { echo "FAIL: fitted_data.npz stored/deflated as output.compress_hdf5 says"; exit 1; }
# The stored archive is the same file whichever ranks wrote which slabs.
cmp "$tmp/one/nlsq/fitted_data.npz" "$tmp/two/nlsq/fitted_data.npz" ||
  { echo "FAIL: fitted_data.npz at 2 ranks differs from 1 rank's"; exit 1; }
echo "PASS"
