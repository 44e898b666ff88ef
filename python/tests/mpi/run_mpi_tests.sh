#!/usr/bin/env bash
# The module under mpiexec -n 2 with mpi4py: the CLI fits the demo config at 2 ranks, then
# test_mpi.py fits it from Python at 2 ranks and compares. Run by ctest (python_module_mpi)
# from the source tree with HOMODYNE_CLI and PYTHONPATH set; argument: the Python.
set -euo pipefail
python=${1:-python3}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../../scripts/mpi-env.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
mpiexec -n 2 "$HOMODYNE_CLI" --config examples/real_static.yaml --output-dir "$out/cli" --quiet \
  || status=$?
# 0 converged, 4 not converged, 5 misfit: each writes its results.
if [[ $status -ne 0 && $status -ne 4 && $status -ne 5 ]]; then
  echo "run_mpi_tests: the CLI fit failed (exit $status)" >&2
  exit 1
fi
export HOMODYNE_CLI_RESULT="$out/cli"
mpiexec -n 2 "$python" -m pytest -q -p no:cacheprovider "$here/test_mpi.py"
