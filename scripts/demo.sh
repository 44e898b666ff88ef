#!/usr/bin/env bash
# First README command: install dependencies, build (Release; the build also writes the
# synthetic demo dataset), then run the main job at 2 MPI ranks:
#   1. laminar-flow NLSQ fit of the synthetic dataset, with a truth-vs-fit table;
#   2. static NLSQ fit of the real measured matrix shipped in examples/data;
#   3. a short Consensus Monte Carlo run on the first 40 frames of the synthetic dataset,
#      warm-started from fit 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh
source scripts/mpi-env.sh
echo "== laminar_flow fit of the synthetic demo dataset (2 ranks) =="
mpiexec -n 2 build/apps/homodyne --config examples/laminar_flow_demo.yaml \
  --output-dir homodyne_results/laminar_demo
echo
echo "== static fit of the real measured matrix (2 ranks) =="
mpiexec -n 2 build/apps/homodyne --config examples/real_static.yaml \
  --output-dir homodyne_results/real_static
echo
echo "== short CMC run on the synthetic demo dataset (2 ranks, warm start from the first fit) =="
mpiexec -n 2 build/apps/homodyne --config examples/laminar_flow_demo_cmc.yaml --method cmc \
  --nlsq-result homodyne_results/laminar_demo --output-dir homodyne_results/laminar_demo_cmc
