#!/usr/bin/env bash
# The compatibility corpus (tests/compat/): configs in the shapes of homodyne's and xpcsjax's
# current and earlier templates and of their documentation's examples. Each one must
# validate (warnings allowed), fit a small synthetic dataset written from it by
# homodyne-synth (the data path replaced by --data-file), and leave outputs that
# tests/compat/read_outputs.py reads with json, yaml and numpy alone. A few run at 2 ranks,
# a few with homodyne's --output-format yaml. A refusal, a crash or an unreadable output
# names the config.
set -uo pipefail
bindir=$(cd "$1" && pwd); mpiexec=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$src/tests/compat
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
"$py" -c "import numpy, yaml" 2>/dev/null || { echo "SKIP: python3 with numpy and yaml needed"; exit 77; }
failures=()

# Two ranks for these, homodyne's --output-format yaml for those.
two_ranks=" homodyne_laminar_flow_v2.23 homodyne_master_2025-12 xpcsjax_static_anisotropic_current xpcsjax_two_component_current "
yaml_out=" homodyne_static_v2.23 homodyne_master_v2.23 doc_xpcsjax_quickstart "

mode_of() {  # the analysis mode a config names (homodyne's top-level key or xpcsjax's analysis_settings)
  "$py" - "$1" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
settings = c.get("analysis_settings") or {}
m = (c.get("analysis_mode") or settings.get("analysis_mode")
     or (c.get("parameter_space") or {}).get("model") or "static")
print("two_component" if m in ("two_component", "heterodyne") else
      "laminar_flow" if m == "laminar_flow" else "static")
PY
}

n=0
for cfg in "$corpus"/*.yaml; do
  name=$(basename "$cfg" .yaml); dir=$tmp/$name; mkdir -p "$dir"; n=$((n + 1))
  mode=$(mode_of "$cfg")
  case $mode in
    static) angles="0,90" ;;
    *) angles="0,5,88,92" ;;
  esac
  if ! "$bindir/homodyne-config" --validate "$cfg" > "$dir/validate.log" 2>&1; then
    cat "$dir/validate.log"; failures+=("$name: --validate refused it"); continue
  fi
  if ! "$bindir/homodyne-synth" --config "$cfg" -o "$dir/data.h5" --frames 50 --angles "$angles" \
       --noise 0.001 --seed 3 -q > "$dir/synth.log" 2>&1; then
    cat "$dir/synth.log"; failures+=("$name: homodyne-synth could not write data from it"); continue
  fi
  ranks=1; [[ $two_ranks == *" $name "* ]] && ranks=2
  extra=(); fmt=""
  [[ $yaml_out == *" $name "* ]] && { extra+=(--output-format yaml); fmt=yaml; }
  # Each fit stays small: a capped iteration count (a stop at the cap is exit 4, labelled).
  # Run inside its own directory: configs that name ./checkpoints must not write there.
  (cd "$dir" && "$mpiexec" -n $ranks "$bindir/homodyne" --config "$cfg" --data-file data.h5 \
      -o out --max-iterations 40 "${extra[@]}" > fit.log 2>&1)
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 4 ] && [ $rc -ne 5 ]; then
    tail -20 "$dir/fit.log"; failures+=("$name: the fit exited $rc"); continue
  fi
  # Every line before the run's banner (config notes, warnings, the output line) once.
  dup=$(sed '/^homodyne-hpc /q' "$dir/fit.log" | grep -v '^  ' | sort | uniq -d)
  [ -z "$dup" ] && [ "$(grep -c '^homodyne-hpc ' "$dir/fit.log")" -eq 1 ] ||
    failures+=("$name: a line of the run's start is printed more than once: $dup")
  [ -e "$dir/checkpoints" ] && failures+=("$name: checkpoints written outside the output directory")
  # An xpcsjax config (its templates and documentation examples) gets xpcsjax's files too;
  # a homodyne config homodyne's alone (output.layout: auto).
  layout=homodyne; [[ $name == xpcsjax_* || $name == doc_xpcsjax_* ]] && layout=xpcsjax
  "$py" "$corpus/read_outputs.py" "$dir/out" "$mode" $fmt $layout ||
    failures+=("$name: outputs not readable")
  [ "$(grep -c "^output: ${layout}'s result files" "$dir/fit.log")" -eq 1 ] ||
    failures+=("$name: the log does not say once that it writes ${layout}'s files")
  echo "$name ($mode, $ranks rank(s)): exit $rc"
done

[ $n -ge 15 ] || failures+=("only $n configs in the corpus")
if [ ${#failures[@]} -gt 0 ]; then
  printf 'FAIL: %s\n' "${failures[@]}"; exit 1
fi
echo "PASS ($n configs)"
