#!/usr/bin/env bash
# PETSc's options reach the default local solver (our Levenberg-Marquardt runs as the TAO type
# homodyne_lm): a default static fit with -tao_monitor -tao_converged_reason prints every
# iterate and the reason of each local solve, on rank 0 only (the printed lines at 2 ranks are
# those of 1 rank), and its result files have the bits of the fit without the options;
# -tao_max_it ends the default solve at its limit; -tao_type cannot replace the configured
# method (exit 2, naming the option).
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
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 40 --angles "0,60,120" \
  --param D0=30000 --param alpha=-0.6 --noise 0.003 -q || { echo "FAIL: synth"; exit 1; }

fit() {  # fit <ranks> <outdir> [args...]
  local n=$1 out=$2; shift 2
  "$mpiexec" -n "$n" "$bindir/homodyne" --config "$tmp/cfg.yaml" --output-dir "$out" "$@"
}
fit 2 "$tmp/plain" > "$tmp/plain.log" 2>&1 || { cat "$tmp/plain.log"; echo "FAIL: plain fit"; exit 1; }
grep -q ' TAO,' "$tmp/plain.log" && { echo "FAIL: monitor lines without -tao_monitor"; exit 1; }
for n in 2 1; do
  fit $n "$tmp/mon$n" -tao_monitor -tao_converged_reason > "$tmp/mon$n.log" 2>&1 \
    || { cat "$tmp/mon$n.log"; echo "FAIL: fit with -tao_monitor at $n ranks"; exit 1; }
  grep -E '^ *[0-9]+ TAO, +Function value: [^,]+, +Residual: ' "$tmp/mon$n.log" > "$tmp/lines$n"
  grep -E 'TAO +solve (converged|did not converge) due to ' "$tmp/mon$n.log" > "$tmp/reasons$n"
done
cat "$tmp/reasons2"
monitors=$(wc -l < "$tmp/lines2"); solves=$(wc -l < "$tmp/reasons2")
[ "$solves" -ge 1 ] || { echo "FAIL: no converged reason printed"; exit 1; }
# Each local solve prints its start (iteration 0), at least one step and one reason.
[ "$(grep -cE '^ *0 TAO,' "$tmp/lines2")" -eq "$solves" ] || { echo "FAIL: one iteration-0 line per solve"; exit 1; }
[ "$monitors" -gt $((2 * solves)) ] || { echo "FAIL: too few monitor lines ($monitors for $solves solves)"; exit 1; }
grep -q 'converged due to CONVERGED_GRTOL' "$tmp/reasons2" || { echo "FAIL: no converged solve"; exit 1; }
# Rank 0 prints, the others do not: the lines at 2 ranks are those at 1 rank (same bits).
cmp -s "$tmp/lines1" "$tmp/lines2" || { diff "$tmp/lines1" "$tmp/lines2" | head; echo "FAIL: monitor lines differ 1 vs 2 ranks"; exit 1; }
cmp -s "$tmp/reasons1" "$tmp/reasons2" || { echo "FAIL: reasons differ 1 vs 2 ranks"; exit 1; }

# The options change no bit of the results (wall-clock and rank-count fields aside).
/usr/bin/python3 - "$tmp/plain" "$tmp/mon2" "$tmp/mon1" <<'PY' || { echo "FAIL: results differ with -tao_monitor"; exit 1; }
import json, sys
import h5py, numpy as np
# Wall-clock times and the machine/rank layout (not results) aside.
VOLATILE = ("time", "seconds", "wall", "host", "ranks", "created", "throughput", "device_info")
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not any(s in k.lower() for s in VOLATILE)}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
def h5(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.asarray(obj[()]).tobytes())
                     if isinstance(obj, h5py.Dataset) else None)
    return out
ref = sys.argv[1]
for other in sys.argv[2:]:
    for f in ("nlsq/parameters.json", "nlsq/analysis_results_nlsq.json",
              "nlsq/convergence_metrics.json", "homodyne_results.json"):
        a, b = (strip(json.load(open(f"{d}/{f}"))) for d in (ref, other))
        assert a == b, (other, f, [k for k in a if a[k] != b.get(k)])
    a, b = h5(f"{ref}/nlsq/fitted_data.h5"), h5(f"{other}/nlsq/fitted_data.h5")
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), (other, "fitted_data.h5")
print("results identical with and without -tao_monitor -tao_converged_reason")
PY

# -tao_max_it 1: every local solve of the default fit ends after one step (max_iter, exit 4).
fit 2 "$tmp/max" -tao_max_it 1 -tao_converged_reason > "$tmp/max.log" 2>&1; code=$?
[ $code -eq 4 ] || { tail -20 "$tmp/max.log"; echo "FAIL: -tao_max_it 1 exit $code (expected 4)"; exit 1; }
grep -q '"convergence_status": "max_iter"' "$tmp/max/nlsq/parameters.json" \
  || { echo "FAIL: -tao_max_it not honoured"; exit 1; }
grep -q 'did not converge due to DIVERGED_MAXITS iteration 1' "$tmp/max.log" \
  || { grep TAO "$tmp/max.log"; echo "FAIL: no DIVERGED_MAXITS reason"; exit 1; }

# -tao_type would swap the configured method: refused, naming the option.
fit 2 "$tmp/type" -tao_type bnls > "$tmp/type.log" 2>&1; code=$?
[ $code -eq 2 ] || { tail -5 "$tmp/type.log"; echo "FAIL: -tao_type exit $code (expected 2)"; exit 1; }
grep -q -- '-tao_type bnls on the command line' "$tmp/type.log" || { cat "$tmp/type.log"; echo "FAIL: message"; exit 1; }
[ -e "$tmp/type/nlsq/parameters.json" ] && { echo "FAIL: results written after bad input"; exit 1; }
echo "PASS"
