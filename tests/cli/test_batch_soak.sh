#!/usr/bin/env bash
# Batch soak at 2 ranks: 200 small tasks, one in ten a bad input of another kind; good tasks
# give the answer of the same fit alone, bad ones their message, memory stays flat
# (tests/cli/batch_soak.py, docs/reliability.md).
set -uo pipefail
bindir=$1; mpiexec=$2
exec /usr/bin/python3 "$(dirname "$0")/batch_soak.py" "$bindir" "$mpiexec" --tasks 200
