#!/usr/bin/env bash
# The CMC shard map export (src/cmc/shard_map_export.h; bench/stan gives Stan the same
# coordinates with it): with HOMODYNE_CMC_MAP_DIR set, each shard's mode and Laplace factor
# are written as JSON, the factor lower triangular with a positive diagonal, its centre the
# mode, and the mode's coordinates u map to its θ by the static geometry (log D0, log
# contrast, offset + contrast, logistic alpha and D_offset) that
# bench/stan/homodyne_static_shard_whitened.stan implements; the draws are bitwise those of
# a run without the variable; an unwritable folder is an error naming the file.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
cat > "$tmp/c.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.05
  start_frame: 1
  end_frame: 30
  scattering: {wavevector_q: 0.007}
experimental_data:
  data_folder_path: $tmp
  data_file_name: s.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [2400, -0.6, 20]
parameter_space:
  bounds:
    - {name: D0, min: 100, max: 100000}
    - {name: alpha, min: -2, max: 2}
    - {name: D_offset, min: -100000, max: 100000}
optimization:
  cmc:
    per_angle_mode: individual
    known_sigma: 0.002
    sharding: {num_shards: 2}
YAML
"$bindir/homodyne-synth" --config "$tmp/c.yaml" -o "$tmp/s.h5" --frames 30 --angles "0,90" \
  --param D0=2400 --param alpha=-0.6 --param D_offset=20 --contrast 0.2 --noise 0.002 -q \
  || { echo "FAIL: synth"; exit 1; }
args=(--config "$tmp/c.yaml" --method cmc --no-nlsq-warmstart --n-warmup 30 --n-samples 30
      --n-chains 2 -q)
mkdir -p "$tmp/map"
HOMODYNE_CMC_MAP_DIR="$tmp/map" "$mpiexec" -n 1 -x HOMODYNE_CMC_MAP_DIR "$bindir/homodyne" \
  "${args[@]}" --output-dir "$tmp/with" > "$tmp/with.log" 2>&1 \
  || { cat "$tmp/with.log"; echo "FAIL: run with the export"; exit 1; }
"$mpiexec" -n 1 "$bindir/homodyne" "${args[@]}" --output-dir "$tmp/without" \
  > "$tmp/without.log" 2>&1 || { cat "$tmp/without.log"; echo "FAIL: run without"; exit 1; }
"$py" - "$tmp" <<'PY' || { echo "FAIL: shard map"; exit 1; }
import glob, json, sys
import h5py, numpy as np
tmp = sys.argv[1]
files = sorted(glob.glob(tmp + "/map/shard_map_*.json"))
assert len(files) == 2, files
for path in files:
    m = json.load(open(path))
    names, d = m["names"], len(m["names"])
    lo, hi = m["site_lower"], m["site_upper"]
    L = np.array(m["whitening"]["chol"]).reshape(d, d)
    assert np.all(np.triu(L, 1) == 0) and np.all(np.diag(L) > 0), path
    u = np.array(m["mode"]["u"])
    assert np.array_equal(u, np.array(m["whitening"]["centre"])), path
    th = {}
    for i, nm in enumerate(names):
        if nm == "D0" or nm.startswith("contrast"):
            th[nm] = np.exp(u[i])
        elif nm in ("alpha", "D_offset"):
            th[nm] = lo[i] + (hi[i] - lo[i]) / (1 + np.exp(-u[i]))
    for i, nm in enumerate(names):
        if nm.startswith("offset"):
            th[nm] = u[i] - th["contrast" + nm[len("offset"):]]
    got = np.array([th[nm] for nm in names])
    assert np.allclose(got, m["mode"]["theta"], rtol=1e-10, atol=1e-12), (got, m["mode"]["theta"])
    assert m["mode_search_cpu_seconds"] > 0, path
    print(f"{path.split('/')[-1]}: d {d}, {m['mode']['iterations']} mode step(s), u -> theta ok")
def read(p):
    out = {}
    with h5py.File(p, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
    return out
a, b = read(tmp + "/with/cmc/samples.h5"), read(tmp + "/without/cmc/samples.h5")
assert a.keys() == b.keys() and a and all(np.array_equal(a[k], b[k]) for k in a), "draws differ"
print("draws bit-identical with and without the export")
PY
HOMODYNE_CMC_MAP_DIR="$tmp/missing/dir" "$mpiexec" -n 1 -x HOMODYNE_CMC_MAP_DIR \
  "$bindir/homodyne" "${args[@]}" --output-dir "$tmp/bad" > "$tmp/bad.log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "missing/dir/shard_map_" "$tmp/bad.log" \
  || { cat "$tmp/bad.log"; echo "FAIL: unwritable map folder: exit $rc, file not named"; exit 1; }
echo "PASS"
