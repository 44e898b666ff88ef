#!/usr/bin/env bash
# Lopsided faults (one rank: error, SIGKILL, full disk, 10x slower) at the phases of a job,
# 2 ranks: the CI subset of tests/cli/fault_matrix.py (the whole matrix at 2 and 4 ranks:
# bash scripts/fault-matrix.sh; docs/reliability.md).
set -uo pipefail
bindir=$1; mpiexec=$2
exec /usr/bin/python3 "$(dirname "$0")/fault_matrix.py" "$bindir" "$mpiexec"
