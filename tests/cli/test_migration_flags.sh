#!/usr/bin/env bash
# homodyne's and xpcsjax's flags (docs/migrating.md): --max-iterations and --tolerance set
# their keys, --output-format yaml writes homodyne_results.yaml with the JSON's values,
# xpcsjax's --output names the output directory, flags with no meaning here are accepted
# with a one-line note, xpcsjax's --phi, --mode and two-component --initial-* flags act with
# their meaning, unknown flags are refused in the order given with a pointer to
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
out=$(run --output "$tmp/u" --frobnicate --bogus 3 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "unknown flags: exit $code (expected 2)"; }
grep -q "unknown argument(s): --frobnicate --bogus 3" <<<"$out" || { echo "$out"; fail "the unknown flags are not named in order"; }
grep -q "docs/migrating.md" <<<"$out" || { echo "$out"; fail "no pointer to docs/migrating.md"; }
[ -e "$tmp/u" ] && fail "a refused command line wrote outputs"

# xpcsjax's --phi: only the data's angles within 1 degree of those given are fitted.
out=$(run --output "$tmp/phi" --phi 89.5 2>&1); code=$?
[ $code -eq 0 ] || { echo "$out"; fail "--phi: exit $code"; }
grep -q -- "--phi 89.5: fitting the data's angles within 1 degree" <<<"$out" || { echo "$out"; fail "no line for --phi"; }
"$py" - "$tmp/phi" <<'PY' || fail "--phi 89.5 did not select the 90 degree angle alone"
import json, sys
p = json.load(open(sys.argv[1] + "/nlsq/parameters.json"))
assert p["per_angle"]["phi_angles_deg"] == [90.0], p["per_angle"]["phi_angles_deg"]
PY

# xpcsjax's --mode: static_* on a static config runs; two_component needs a two_component
# config (exit 2, named); with --laminar-flow it contradicts (exit 2).
out=$(run --output "$tmp/m1" --mode static_isotropic --max-iterations 3 2>&1); code=$?
{ [ $code -eq 0 ] || [ $code -eq 4 ]; } || { echo "$out"; fail "--mode static_isotropic: exit $code"; }
grep -q -- "--mode static_isotropic: analysis mode forced" <<<"$out" || { echo "$out"; fail "no line for --mode"; }
out=$(run --output "$tmp/m2" --mode two_component 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "--mode two_component on a static config: exit $code (expected 2)"; }
grep -q -- "--mode two_component needs a two_component config" <<<"$out" || { echo "$out"; fail "--mode two_component: no message"; }
out=$(run --output "$tmp/m3" --mode static --laminar-flow 2>&1); code=$?
[ $code -eq 2 ] || { echo "$out"; fail "--mode static --laminar-flow: exit $code (expected 2)"; }

# xpcsjax's two-component --initial-* flags reach the start of their parameter (a NaN is
# refused naming it), xpcsjax's spelling --initial-D0 works beside homodyne's --initial-d0,
# and a flag of a parameter the mode lacks is ignored with a line, as xpcsjax ignores it.
cat > "$tmp/tc.yaml" <<YAML
analysis_mode: two_component
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0237}
experimental_data:
  data_folder_path: $tmp
  data_file_name: tc.h5
initial_parameters:
  parameter_names: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, phi0_het]
  values: [50, 0, 0, 300, 0, 0, 5, 0, 0, 0.4, 0, 0, 0, 0]
YAML
"$bindir/homodyne-synth" --config "$tmp/tc.yaml" -o "$tmp/tc.h5" --frames 30 --angles "0,90" --noise 0.002 -q || fail "synth tc"
for flag in v0 v-beta v-offset f0 f1 f2 f3; do
  name=${flag/-/_}
  out=$("$mpiexec" -n 1 "$bindir/homodyne" --config "$tmp/tc.yaml" -o "$tmp/tc_$flag" --mode two_component \
        "--initial-$flag" nan 2>&1); code=$?
  [ $code -eq 2 ] || { echo "$out"; fail "--initial-$flag nan: exit $code (expected 2)"; }
  grep -q "initial value of $name must be a finite number" <<<"$out" || { echo "$out"; fail "--initial-$flag does not reach $name"; }
done
out=$(run --output "$tmp/d0" --initial-D0 nan 2>&1)
grep -q "initial value of D0 must be a finite number" <<<"$out" || { echo "$out"; fail "--initial-D0 does not reach D0"; }
out=$(run --output "$tmp/v0" --initial-v0 3 --max-iterations 3 2>&1)
grep -q -- "--initial v0 = 3: ignored: analysis_mode static has no parameter v0" <<<"$out" || { echo "$out"; fail "no line for a flag outside the mode"; }

help=$("$bindir/homodyne" --help 2>&1)
for code in "0 ok" "1 internal error" "2 bad input" "4 not converged" "5 misfit" "75"; do
  grep -q "$code" <<<"$help" || fail "--help does not list exit code '$code'"
done
echo "PASS"
