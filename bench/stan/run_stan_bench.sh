#!/usr/bin/env bash
# homodyne-hpc's NUTS against Stan's (rstan) on the same CMC shard posteriors, one command:
#   bash bench/stan/run_stan_bench.sh [build dir] [output dir] [extra stan_bench.py options]
# Writes stan_bench.json and stan_bench.md (docs/performance.md quotes them): per shard three
# Stan rows (the model as a user writes it, on unit scale, in homodyne's whitened
# coordinates) and ours, 5 seeds each (stan_bench.py --help). Needs r-cran-rstan and
# r-cran-jsonlite for the Stan side (apt-get install -y r-cran-rstan r-cran-jsonlite);
# without them only homodyne-hpc is measured. Run it alone on the machine: CPU seconds are
# compared. Resumable: runs already in the output's stan_bench.json are kept. Shard a takes
# about 10 CPU-minutes (5 seeds, 4 rows) plus compiling the three Stan models once; on shard
# b a stan_user run takes about 2,000 CPU s, a stan_unitscale run about 75 and the others
# under 30 (--shards, --rows and --seeds choose).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/bench/stan/$(date +%Y-%m-%d)}
shift $(( $# > 2 ? 2 : $# ))
source "$root/scripts/mpi-env.sh"
exec /usr/bin/python3 "$root/bench/stan/stan_bench.py" --build "$build" --out "$out" "$@"
