#!/usr/bin/env bash
# Numerical faults end in a clear failure, never in a silent NaN result: data whose values
# overflow chi2 exits 1 with "numerical failure" in the summary (once, at 2 ranks) and the
# result files marked failed; extreme initial values still give finite results.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }
/usr/bin/python3 - "$tmp/data.h5" "$tmp/huge.h5" <<'PY' || { echo "FAIL: h5py"; exit 1; }
import shutil, sys, h5py
shutil.copyfile(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as h:
    for k in h["/exchange/C2T_all"]:
        d = h["/exchange/C2T_all/" + k]
        d[...] = d[...] * 1e300  # finite values whose squares overflow
PY
out=$(timeout 120 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --config "$tmp/cfg.yaml" \
        --data-file "$tmp/huge.h5" -o "$tmp/out" 2>&1); code=$?
echo "$out" | grep -E "status|chi2 "
[ $code -eq 1 ] || { echo "FAIL: overflowing data gave exit $code, expected 1"; exit 1; }
n=$(grep -c 'numerical failure: chi2 = inf' <<<"$out" || true)
[ "$n" -eq 1 ] || { echo "FAIL: numerical failure reported $n times"; exit 1; }
grep -q '"convergence_status": "failed"' "$tmp/out/nlsq/parameters.json" \
  || { echo "FAIL: parameters.json not marked failed"; exit 1; }

# Extreme initial values (alpha at its upper bound, D0 far too large): finite result.
out=$(timeout 120 "$mpiexec" -n 2 --oversubscribe "$bindir/homodyne" --config "$tmp/cfg.yaml" \
        -o "$tmp/out2" --initial-alpha 2 --initial-d0 1e12 2>&1); code=$?
echo "$out" | grep -E 'status'
grep -qiE '\bnan\b' "$tmp/out2/nlsq/parameters.json" && { echo "FAIL: NaN in parameters.json"; exit 1; }
[ $code -eq 0 ] || { echo "FAIL: extreme initial values gave exit $code"; exit 1; }
echo PASS
