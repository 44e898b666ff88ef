#!/usr/bin/env bash
# homodyne-config: writes both templates, validates them (exit 0; also by homodyne's -v FILE),
# refuses to overwrite without --force, and rejects a broken config with exit 2 naming the key
# and line.
set -euo pipefail
bindir=$1
tool="$(cd "$bindir" && pwd)/homodyne-config"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() { echo "FAIL: $*"; exit 1; }

# Default output names.
"$tool" --mode static >/dev/null || fail "--mode static"
"$tool" --mode laminar_flow >/dev/null || fail "--mode laminar_flow"
[ -f homodyne_static_config.yaml ] || fail "no homodyne_static_config.yaml"
[ -f homodyne_laminar_flow_config.yaml ] || fail "no homodyne_laminar_flow_config.yaml"

for mode in static laminar_flow; do
  out=$("$tool" --validate "homodyne_${mode}_config.yaml") || fail "template $mode does not validate"
  grep -q "analysis mode : $mode" <<<"$out" || fail "summary lacks mode $mode"
  grep -q "data file" <<<"$out" || fail "summary lacks the data file"
  grep -q "D0" <<<"$out" || fail "summary lacks parameters"
done

# homodyne's short form: -v FILE validates (the same summary); --verbose lists the keys
# accepted but not used; --interactive is a note, not an error.
out=$("$tool" -v homodyne_static_config.yaml) || fail "-v FILE does not validate"
grep -q "analysis mode : static" <<<"$out" || fail "-v FILE: no summary"
[ "$out" = "$("$tool" --validate homodyne_static_config.yaml)" ] || fail "-v and --validate differ"
"$tool" -v homodyne_static_config.yaml --verbose | grep -q "quality_validation.enable" \
  || fail "--verbose lists no unused keys"
set +e
"$tool" --interactive > /dev/null 2> err.txt
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--interactive alone gave exit $rc"
grep -q "note: --interactive" err.txt && grep -q "nothing to do" err.txt \
  || fail "--interactive: $(cat err.txt)"
"$tool" --mode static -o interactive.yaml --interactive 2> err.txt > /dev/null \
  || fail "--interactive with --mode"
[ -f interactive.yaml ] && grep -q "note: --interactive" err.txt || fail "--interactive note"

# Overwrite protection and --force.
echo "sentinel" > mine.yaml
set +e
"$tool" --mode static -o mine.yaml >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "overwrite without --force gave exit $rc"
grep -q -- "--force" err.txt || fail "no hint about --force"
[ "$(cat mine.yaml)" = "sentinel" ] || fail "file was modified without --force"
"$tool" --mode static -o mine.yaml --force >/dev/null || fail "--force failed"
grep -q "analysis_mode" mine.yaml || fail "--force did not write the template"
ls -a | grep -q '\.tmp\.' && fail "temporary file left behind"

# A misspelt key: by default a warning naming key, line and suggestion, exit 0 (homodyne's
# leniency); with --strict exit 2 with the same words.
sed 's/^  dt: 0.001/  dtt: 0.001/' homodyne_static_config.yaml > broken.yaml
grep -q "dtt:" broken.yaml || fail "could not build the broken config"
set +e
"$tool" --validate broken.yaml >out.txt 2>err.txt
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat err.txt; fail "an unknown key gave exit $rc without --strict"; }
grep -q "warning: .*1 unknown key(s) ignored" err.txt || { cat err.txt; fail "no warning for the unknown key"; }
grep -q "analyzer_parameters.dtt (unknown key (line [0-9]*); did you mean analyzer_parameters.dt?)" err.txt \
  || { cat err.txt; fail "the warning does not name the key, line and suggestion"; }
set +e
"$tool" --validate broken.yaml --strict >out.txt 2>err.txt
rc=$?
set -e
cat err.txt
[ "$rc" -eq 2 ] || fail "broken config gave exit $rc with --strict"
grep -q "analyzer_parameters.dtt: unknown key (line [0-9]*); did you mean analyzer_parameters.dt?" err.txt \
  || fail "error does not name the key, line and suggestion"

# An invalid value: exit 2 naming the key and the rule.
sed 's/^  start_frame: 1 /  start_frame: 0 /' homodyne_static_config.yaml > zero.yaml
set +e
"$tool" --validate zero.yaml >/dev/null 2>err.txt
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "start_frame 0 gave exit $rc"
grep -q "analyzer_parameters.start_frame: must be >= 1" err.txt || fail "rule not named: $(cat err.txt)"

# Missing file.
set +e
"$tool" --validate does_not_exist.yaml >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "missing config gave exit $rc"
echo "PASS"
