# Set-up shared by the bench/run_*.sh scripts; source it with the script's own arguments:
#   source "$(dirname "$0")/lib.sh" "$@"
# Sets root (the repository), build (argument 1, default build/), out (argument 2, default
# docs/bench/, created), stamp (today's UTC date, or $BENCH_STAMP: a second run of the day) and
# the MPI environment (scripts/mpi-env.sh).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
out=${2:-$root/docs/bench}
mkdir -p "$out"
source "$root/scripts/mpi-env.sh"
stamp=${BENCH_STAMP:-$(date -u +%Y-%m-%d)}

# run_at_1_and_2_ranks NAME BINARY [ARGS...]: runs build/bench/BINARY under mpiexec at 1 and
# at 2 ranks, each writing its Google Benchmark JSON to $out/NAME_np<ranks>.json, and appends
# those paths to the array `runs`.
runs=()
run_at_1_and_2_ranks() {
  local name=$1 binary=$2 ranks f
  shift 2
  for ranks in 1 2; do
    f="$out/${name}_np${ranks}.json"
    mpiexec -n "$ranks" "$build/bench/$binary" "$@" --benchmark_out="$f" \
      --benchmark_out_format=json
    runs+=("$f")
  done
}
