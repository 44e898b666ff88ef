#!/usr/bin/env bash
# Placement and autotune from the command line: `homodyne-topology --autotune` writes the
# cache under $XDG_CACHE_HOME; `homodyne -v` takes its thread count from that cache unless
# --threads or --no-autotune-cache is given, logs every rank's placement and the library
# thread settings, and records the placement in convergence_metrics.json.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/cache"
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS

"$bindir/homodyne-topology" --autotune --autotune-frames 60 > "$tmp/tune.txt" 2>&1 \
  || { cat "$tmp/tune.txt"; echo "FAIL: autotune"; exit 1; }
cat "$tmp/tune.txt"
cache=$(ls "$tmp"/cache/homodyne/tune-*.json 2>/dev/null)
[ -n "$cache" ] && [ "$(wc -l <<<"$cache")" -eq 1 ] || { echo "FAIL: no single cache file"; exit 1; }
grep -q "cached in $cache" "$tmp/tune.txt" || { echo "FAIL: cache path not printed"; exit 1; }
cores=$(hwloc-calc -N core all)
python3 - "$cache" "$cores" <<'PY' || { echo "FAIL: cache content"; exit 1; }
import json, sys
d = json.load(open(sys.argv[1])); cores = int(sys.argv[2])
assert 1 <= d["threads_per_rank"] <= cores, d
assert len(d["timings"]) == 3 * cores, d["timings"]
assert sys.argv[1].endswith("tune-%s.json" % d["signature"])
PY
# A second run finds the same hardware signature (same file).
"$bindir/homodyne-topology" --autotune --autotune-frames 40 --json > "$tmp/tune.json" \
  || { echo "FAIL: autotune --json"; exit 1; }
[ "$(ls "$tmp"/cache/homodyne/ | wc -l)" -eq 1 ] || { echo "FAIL: signature not stable"; exit 1; }

cat > "$tmp/cfg.yaml" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [15000, -0.3, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 40 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || { echo "FAIL: synth"; exit 1; }

# The cache says 1 thread: homodyne (one rank, bound to all cores) uses it.
python3 - "$cache" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["threads_per_rank"] = 1
json.dump(d, open(sys.argv[1], "w"))
PY
run() { "$mpiexec" "$@" 2>&1; }
out=$(run -n 1 --bind-to none "$bindir/homodyne" --config "$tmp/cfg.yaml" -o "$tmp/o1" -v)
grep -q "threads per rank: 1 from the autotune cache $cache (measured .*, tuned 1)" <<<"$out" \
  || { echo "$out" | head -20; echo "FAIL: cache not used"; exit 1; }
grep -q "library threads: OMP_NUM_THREADS was unset: set to 1" <<<"$out" || { echo "FAIL: OMP note"; exit 1; }
grep -q "library threads: OPENBLAS_NUM_THREADS was unset: set to 1" <<<"$out" \
  || { echo "FAIL: OpenBLAS note"; exit 1; }
grep -Eq "placement: rank 0 @ .*NUMA [0-9-]+ → cores [0-9]+ \(PU [0-9]+\)$" <<<"$out" \
  || { echo "$out" | grep placement; echo "FAIL: one pinned thread expected"; exit 1; }
out=$(run -n 1 --bind-to none "$bindir/homodyne" --config "$tmp/cfg.yaml" -o "$tmp/o2" -v --no-autotune-cache)
grep -q "threads per rank: one per core of the rank's cpuset (--no-autotune-cache)" <<<"$out" \
  || { echo "FAIL: --no-autotune-cache"; exit 1; }
[ "$(grep -o 'PU [0-9]*' <<<"$(grep 'placement: rank 0' <<<"$out")" | wc -l)" -eq "$cores" ] \
  || { echo "$out" | grep placement; echo "FAIL: one thread per core expected"; exit 1; }
out=$(OMP_NUM_THREADS=3 run -n 1 -x OMP_NUM_THREADS "$bindir/homodyne" --config "$tmp/cfg.yaml" \
      -o "$tmp/o3" -v --threads 1)
grep -q "threads per rank: 1 (--threads)" <<<"$out" || { echo "FAIL: --threads source"; exit 1; }
grep -q "OMP_NUM_THREADS=3 (from the environment, kept)" <<<"$out" || { echo "FAIL: user value"; exit 1; }

# Two ranks: every rank's placement in the log and in the run report.
out=$(run -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" -o "$tmp/o4" -v)
for r in 0 1; do
  grep -q "placement: rank $r @" <<<"$out" || { echo "FAIL: rank $r placement not logged"; exit 1; }
done
python3 - "$tmp/o4/nlsq/convergence_metrics.json" <<'PY' || { echo "FAIL: placement in report"; exit 1; }
import json, sys
p = json.load(open(sys.argv[1]))["device_info"]["placement"]
assert len(p) == 2 and p[0].startswith("rank 0 @") and p[1].startswith("rank 1 @"), p
PY
echo PASS
