#!/usr/bin/env bash
# Whole job against a direct Ceres fit (issue 43), one command:
#
#   bash bench/whole_job/run_ceres_bench.sh [build dir] [output dir]
#        (defaults: build, docs/bench; writes ceres_<date>.json and ceres_<date>.md)
#
# Builds the Ceres peer (bench/peers/ceres, its own CMake project, never part of the main
# build) and, for each size (laminar_flow, 23 angles × SIZES frames, the whole-job
# benchmark's seeded homodyne-synth data and <data>.truth.json), runs REPEATS rounds of, in
# turn:
#   ceres     ceres_peer CFG --x0 truth --threads 2
#   default   homodyne-hpc, 2 ranks × 1 thread, the default NLSQ pipeline from the truth
#             (initial_parameters.values), per_angle_mode individual
#   local     the same with the pipeline's recovery stages off (recovery.on_stall none,
#             phi0_restarts 0, hierarchical stage off): one local fit
# Whole-process wall time from outside, fit time from each tool's own report, χ² of each
# (same convention; agreement to 1e-9 relative is checked and recorded), homodyne-hpc's
# fixed_costs section of run_report.yaml, the load average before every run. Medians, the
# ratios Ceres whole / ours whole against issue 43's bar (≥ 1×, 2×, 3× at 200, 500, 1000
# frames) and the fixed-cost bar (≤ 0.2 s): bench/whole_job/ceres_bench.py.
#
# Without libceres-dev (see bench/peers/ceres/README.md: install it together with the
# BLAS/LAPACK restore) the benchmark is skipped with a message and exit status 0.
#
# Parameters (environment):
#   SIZES             frames per dataset ("200 500 1000")
#   REPEATS           rounds (3)
#   DATA_DIR          scratch for data and run outputs (${WORK:-/tmp}/ceres_bench_data;
#                     never inside the repository: 23 × 1000 is ~200 MB)
#   CERES_PEER_BUILD  build dir of the peer (/tmp/ceres_peer_build)
#   RUN_TIMEOUT       seconds before one run is killed and recorded as a timeout (1800)
#   BENCH_STAMP       the date part of the output names
#   WARM_MEMORY_GIB   memory touched once before the runs (8; 0: none). On a virtual machine
#                     whose memory the host backs lazily, writing result files into pages not
#                     touched since boot ran ~10x slower than into touched ones; the rates
#                     of dd before and after are recorded either way
set -euo pipefail
source "$(dirname "$0")/../lib.sh" "$@"
for app in homodyne homodyne-synth homodyne-config; do
  [ -x "$build/apps/$app" ] || { echo "error: $build/apps/$app missing (build the apps)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is needed (Debian package time)" >&2; exit 2; }
SIZES=${SIZES:-"200 500 1000"}
REPEATS=${REPEATS:-3}
DATA_DIR=${DATA_DIR:-${WORK:-/tmp}/ceres_bench_data}
CERES_PEER_BUILD=${CERES_PEER_BUILD:-/tmp/ceres_peer_build}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
WARM_MEMORY_GIB=${WARM_MEMORY_GIB:-8}

data_abs=$(realpath -m "$DATA_DIR")
case "$data_abs/" in
  "$root/"*) echo "error: DATA_DIR ($data_abs) is inside the repository ($root)" >&2; exit 2 ;;
esac
mkdir -p "$data_abs"

if ! dpkg-query -W -f='${Status}' libceres-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "run_ceres_bench: skipped: libceres-dev is not installed; install it as" \
    "bench/peers/ceres/README.md says (with the BLAS/LAPACK restore)" >&2
  exit 0
fi
echo "building the Ceres peer in $CERES_PEER_BUILD"
cmake -S "$root/bench/peers/ceres" -B "$CERES_PEER_BUILD" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$CERES_PEER_BUILD" -j2 > /dev/null
peer="$CERES_PEER_BUILD/ceres_peer"

command="SIZES='$SIZES' REPEATS=$REPEATS bash bench/whole_job/run_ceres_bench.sh${*:+ $*}"
echo "Ceres benchmark: sizes [$SIZES] frames × 23 angles, $REPEATS round(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$root/bench/whole_job/ceres_bench.py" --root "$root" --build "$build" --peer "$peer" \
  --out "$out/ceres_${stamp}.json" --data-dir "$data_abs" --sizes "$SIZES" \
  --repeats "$REPEATS" --timeout "$RUN_TIMEOUT" --command "$command" \
  --warm-memory-gib "$WARM_MEMORY_GIB"
