#!/usr/bin/env bash
# Every job script parses (bash -n), documents its parameters, and calls homodyne with
# options that the current homodyne accepts.
set -uo pipefail
bindir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
help=$("$bindir/homodyne" --help 2>&1)
status=0
for f in "$root"/jobscripts/*.sbatch; do
  bash -n "$f" || { echo "FAIL: $f does not parse"; status=1; }
  grep -q '^# Parameters\|^# .*Parameters' "$f" || { echo "FAIL: $f documents no parameters"; status=1; }
  for opt in $(grep -v '^[[:space:]]*#' "$f" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    case "$opt" in
      --job-name|--nodes|--ntasks-per-node|--cpus-per-task|--time|--output|--mpi|--cpu-bind|\
      --mem-bind|--map-by|--bind-to|--report-bindings|--hostfile|--signal|--requeue) continue ;;
    esac
    grep -q -- "$opt" <<<"$help" || { echo "FAIL: $f uses $opt, which homodyne does not accept"; status=1; }
  done
done
[ $status -eq 0 ] && echo PASS
exit $status
