#!/usr/bin/env bash
# homodyne's logging section on the command line: console.level quiets the console, the
# command line's -v wins over it, file.enabled writes rank 0's log (time- and level-stamped)
# to <output>/logs or to file.path, nothing else writes a log file, and a log folder that
# cannot be made is bad input naming logging.file.path before any work.
set -uo pipefail
bindir=$1; mpiexec=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

write_cfg() {  # write_cfg <file> <logging section lines>
  cat > "$1" <<YAML
analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
$2
YAML
}
write_cfg "$tmp/plain.yaml" ""
"$bindir/homodyne-synth" --config "$tmp/plain.yaml" -o "$tmp/data.h5" --frames 30 \
  --angles "0,90" --param D0=20000 --param alpha=-0.4 --param D_offset=0 --noise 0.001 -q \
  || fail "synth"

# 1. No logging section: the start line on the console, no log file anywhere.
cd "$tmp" || fail "cd"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config plain.yaml -o r_plain 2>&1) \
  || { echo "$out"; fail "plain run"; }
grep -q "^homodyne-hpc .*nlsq fit of" <<<"$out" || { echo "$out"; fail "no start line"; }
[ -z "$(find "$tmp" -name '*.log')" ] || fail "a log file without logging.file.enabled"

# 2. console.level WARNING, a file at the default place: the console has no info line, the
#    file has them (and debug lines: file.level DEBUG by default), stamped, once each.
write_cfg "$tmp/file.yaml" "logging:
  level: INFO
  console: {enabled: true, level: warning}
  file: {enabled: true, filename: fit.log}"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config file.yaml -o r_file 2>&1) \
  || { echo "$out"; fail "run with a log file"; }
grep -q "^homodyne-hpc " <<<"$out" && { echo "$out"; fail "console.level WARNING printed info lines"; }
logs=("$tmp"/r_file/logs/fit_*.log)
[ ${#logs[@]} -eq 1 ] && [ -s "${logs[0]}" ] || fail "no single log file in r_file/logs: ${logs[*]}"
log=${logs[0]}
grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} INFO +homodyne-hpc .*nlsq fit of" "$log" \
  || { cat "$log"; fail "the file lacks the stamped start line"; }
grep -qE "^[0-9-]{10} [0-9:]{8} DEBUG " "$log" || fail "the file lacks debug lines (file.level DEBUG)"
[ "$(grep -cE "INFO +homodyne-hpc " "$log")" -eq 1 ] || fail "the start line is not there once (one rank writes)"

# 3. -v on the command line wins over console.level; file.path and {run_id} are honoured.
write_cfg "$tmp/path.yaml" "logging:
  console: {level: ERROR}
  file: {enabled: true, path: $tmp/mylogs, filename: 'run-{run_id}.txt', level: WARNING}"
out=$("$mpiexec" -n 1 "$bindir/homodyne" --config path.yaml -o r_path -v 2>&1) \
  || { echo "$out"; fail "run with -v"; }
grep -q "^homodyne-hpc " <<<"$out" || { echo "$out"; fail "-v did not win over console.level ERROR"; }
files=("$tmp"/mylogs/run-*.txt)
[ ${#files[@]} -eq 1 ] && [ -e "${files[0]}" ] || fail "no run-<id>.txt in file.path"
grep -q " INFO " "${files[0]}" && fail "file.level WARNING wrote info lines"
[ -d "$tmp/r_path/logs" ] && fail "a log folder in the output directory although file.path is set"

# 4. A log folder under a regular file: bad input naming the key, exit 2, no results.
touch "$tmp/blocker"
write_cfg "$tmp/bad.yaml" "logging:
  file: {enabled: true, path: $tmp/blocker/logs}"
out=$("$mpiexec" -n 2 "$bindir/homodyne" --config bad.yaml -o r_bad 2>&1); rc=$?
[ $rc -eq 2 ] || { echo "$out"; fail "an unusable log folder exited $rc, not 2"; }
grep -q "logging.file.path" <<<"$out" || { echo "$out"; fail "the message does not name logging.file.path"; }
[ -e "$tmp/r_bad/nlsq" ] && fail "results written after bad input"
echo "PASS"
