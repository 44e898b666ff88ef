#!/usr/bin/env bash
# homodyne's and xpcsjax's flags (docs/migrating.md): --max-iterations and --tolerance set
# their keys, --output-format yaml writes homodyne_results.yaml with the JSON's values,
# xpcsjax's --output names the output directory, flags with no meaning here are accepted
# with a one-line note, unknown flags are refused in the order given with a pointer to
# docs/migrating.md, and --help lists every exit code.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }

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
  values: [10000, -0.5, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/cfg.yaml" -o "$tmp/data.h5" --frames 30 --angles "0,90" \
  --param D0=20000 --param alpha=-0.4 --noise 0.001 -q || fail "synth"
run() { "$mpiexec" -n 2 "$bindir/homodyne" --config "$tmp/cfg.yaml" "$@"; }

# --max-iterations 1: one step, not converged (exit 4), the limit named in the results.
run --output "$tmp/one" --max-iterations 1 > "$tmp/one.log" 2>&1; code=$?
[ $code -eq 4 ] || { cat "$tmp/one.log"; fail "--max-iterations 1: exit $code (expected 4)"; }
"$py" - "$tmp/one" <<'PY' || fail "--max-iterations 1 not honoured"
import json, sys
s = json.load(open(sys.argv[1] + "/nlsq/analysis_results_nlsq.json"))["optimization_summary"]
assert s["iterations"] <= 1 and s["convergence_status"] == "max_iter", s
PY

# --tolerance, --output-format yaml, the ignored flags with their notes, --output.
out=$(run --output "$tmp/y" --tolerance 1e-9 --output-format yaml --no-jit --cmc-backend numpyro \
      --plotting-backend datashader --parallel-plots 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; fail "homodyne's flags: exit $code"; }
for flag in --no-jit "--cmc-backend numpyro" "--plotting-backend datashader" --parallel-plots; do
  [ "$(grep -c -- "$flag: ignored" <<<"$out")" -eq 1 ] || { echo "$out"; fail "no single note for $flag"; }
done
"$py" - "$tmp/y" <<'PY' || fail "homodyne_results.yaml differs from the JSON"
import json, sys, yaml
j = json.load(open(sys.argv[1] + "/homodyne_results.json"))
y = yaml.safe_load(open(sys.argv[1] + "/homodyne_results.yaml"))
assert j == y, "yaml and json differ"
PY

# Unknown flags: exit 2, named in the order given, with the migration page.
out=$(run --output "$tmp/u" --frobnicate --mode foo 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "unknown flags: exit $code (expected 2)"; }
grep -q "unknown argument(s): --frobnicate --mode foo" <<<"$out" || { echo "$out"; fail "the unknown flags are not named in order"; }
grep -q "docs/migrating.md" <<<"$out" || { echo "$out"; fail "no pointer to docs/migrating.md"; }
[ -e "$tmp/u" ] && fail "a refused command line wrote outputs"

help=$("$bindir/homodyne" --help 2>&1)
for code in "0 ok" "1 internal error" "2 bad input" "4 not converged" "5 misfit" "75"; do
  grep -q "$code" <<<"$help" || fail "--help does not list exit code '$code'"
done
echo "PASS"
