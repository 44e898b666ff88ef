#!/usr/bin/env bash
# Every job script parses (bash -n), documents its parameters at the top, has an
# equivalent mpirun line in its comments, and calls homodyne with options that the
# current homodyne accepts (launcher options of sbatch/srun/mpirun/scontrol are listed).
set -uo pipefail
bindir=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
help=$("$bindir/homodyne" --help 2>&1)
status=0
for f in "$root"/jobscripts/*.sbatch; do
  bash -n "$f" || { echo "FAIL: $f does not parse"; status=1; }
  head -20 "$f" | grep -q '^# Parameters\|^# .*Parameters' || { echo "FAIL: $f documents no parameters at the top"; status=1; }
  grep -q '^#.*mpirun ' "$f" || { echo "FAIL: $f has no equivalent mpirun line"; status=1; }
  # Every ${VAR:-default} parameter the script reads is documented in its comments.
  for var in $(grep -o '^[A-Z_]*=\${[A-Z_]*:-' "$f" | cut -d= -f1 | sort -u); do
    grep -q "^#.*\b$var\b" "$f" || { echo "FAIL: $f does not document $var"; status=1; }
  done
  for opt in $(grep -v '^[[:space:]]*#' "$f" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    case "$opt" in
      --job-name|--nodes|--ntasks-per-node|--cpus-per-task|--time|--output|--mpi|--cpu-bind|\
      --mem-bind|--map-by|--bind-to|--report-bindings|--hostfile|--signal|--requeue|\
      --ntasks|--exclusive|--open-mode|--dependency) continue ;;
      --run-dir|--kind|--study|--ranks|--out) continue ;;  # bench/scaling_collect.py
      # From the checkpoint work (another branch): tolerated until it is merged, then the
      # lead removes this line so that homodyne --help must list them.
      --resume|--checkpoint-dir) continue ;;
    esac
    grep -q -- "$opt" <<<"$help" || { echo "FAIL: $f uses $opt, which homodyne does not accept"; status=1; }
  done
done
[ $status -eq 0 ] && echo PASS
exit $status
