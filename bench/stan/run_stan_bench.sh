#!/usr/bin/env bash
# homodyne-hpc's NUTS against Stan's (rstan) on the same CMC shard posteriors, one command:
#   bash bench/stan/run_stan_bench.sh [build dir] [output dir] [extra stan_bench.py options]
# Writes stan_bench.json and stan_bench.md (docs/performance.md quotes them). Needs
# r-cran-rstan and r-cran-jsonlite for the Stan side (apt-get install -y r-cran-rstan
# r-cran-jsonlite); without them the Stan runs are skipped with a message and only
# homodyne-hpc is measured. Run it alone on the machine: CPU seconds are compared.
# Defaults: shards a, b and the laminar demo shard; dense and diagonal metrics; every
# homodyne-hpc coordinate variant (stan_bench.py --help). Takes about an hour, most of it
# Stan on shard b.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/bench/stan/$(date +%Y-%m-%d)}
shift $(( $# > 2 ? 2 : $# ))
source "$root/scripts/mpi-env.sh"
exec /usr/bin/python3 "$root/bench/stan/stan_bench.py" --build "$build" --out "$out" \
  --shards a,b,lam --metrics dense,diag --variants default,geometry_only,whitening_only,plain "$@"
