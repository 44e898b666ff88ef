#!/usr/bin/env bash
# Second README command: install dependencies, build, run the whole test suite
# (serial unit tests, MPI tests at 1 and 2 ranks, command-line tests).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh
source scripts/mpi-env.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900
