#!/usr/bin/env bash
# First README command: install dependencies, build (Release), run the main job at 2 ranks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh
source scripts/mpi-env.sh
mpiexec -n 2 build/apps/homodyne --version
