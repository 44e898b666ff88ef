#!/usr/bin/env bash
# The whole fault-injection matrix (docs/reliability.md): every phase × every fault on one
# rank, at 2 and 4 ranks (oversubscribed), plus the 200-task batch soak. Needs a build
# (bash scripts/build.sh). Writes the per-case results to OUT (default fault_matrix.json)
# and soak.json beside it.
#   bash scripts/fault-matrix.sh [BUILD_DIR] [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${2:-fault_matrix.json}
source "$root/scripts/mpi-env.sh"
mpiexec=$(command -v mpiexec)
status=0
/usr/bin/python3 "$root/tests/cli/fault_matrix.py" "$build/apps" "$mpiexec" --full --json "$out" \
  || status=1
/usr/bin/python3 "$root/tests/cli/batch_soak.py" "$build/apps" "$mpiexec" --tasks 200 \
  --json "$(dirname "$out")/soak.json" || status=1
exit $status
