#!/usr/bin/env bash
# Whole-job side-by-side benchmark: homodyne-hpc against the Python peers, one command:
#
#   bash bench/whole_job/run_whole_job_bench.sh [build dir] [output dir]
#        (defaults: build, docs/bench/whole_job/<UTC date or $BENCH_STAMP>)
#
# For each dataset size (laminar_flow, 23 angles × SIZES frames, seeded homodyne-synth data):
#   homodyne-hpc  default  the config as is (the default NLSQ pipeline: local fit,
#                          hierarchical anti-degeneracy stage, phi0 restarts, stall recovery)
#   homodyne-hpc  local    the same config with recovery.on_stall none, phi0_restarts 0 and
#                          the hierarchical stage off: one local fit, the peers' algorithm class
#   each at 1 and 2 ranks (cores/ranks threads per rank, pinned), every rank under
#   bench/rss_wrap.sh; and the peers in $PEERS_DIR (torch_trf.py, scipy_fd.py, --x0 truth).
# Whole-job time is measured from outside (the whole mpiexec / python command). The tools
# alternate within each repeat, so that machine noise hits all of them alike.
# Writes OUT/whole_job.json (bench/whole_job/whole_job_run.py), then OUT/whole_job.md and
# OUT/whole_job.png (bench/whole_job/whole_job_report.py, which can be re-run on the JSON).
#
# Parameters (environment):
#   SIZES            frames per dataset ("200 500 1000")
#   REPEATS          repeats of every run (3); medians and every value are reported
#   PEER_MAX_FRAMES  the peers are skipped above this many frames (500: memory and time)
#   PEER_TOL         the peers' --tol (1e-10, their own default; 1e-12 was measured to take
#                    2.3x the time and stop at the same chi2)
#   DATA_DIR         scratch dir for the datasets and run outputs (${WORK:-/tmp}/whole_job_data;
#                    never inside the repository: the 23 × 1000 file alone is ~200 MB)
#   PEERS_DIR        the Python peers ($root/../shared/bench/peers); absent: peers skipped
#   RANKS            rank counts of homodyne-hpc ("1 2")
#   RUN_TIMEOUT      seconds before one run is killed and recorded as a timeout (7200)
#   BENCH_STAMP      the date part of the default output dir
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
stamp0=${BENCH_STAMP:-$(date -u +%Y-%m-%d)}

# Fail before creating anything when the build is missing or incomplete.
build_arg=${1:-$repo/build}
if [ ! -d "$build_arg" ]; then
  echo "error: build dir '$build_arg' does not exist (pass it as the first argument)" >&2
  exit 2
fi
for app in homodyne homodyne-synth homodyne-config; do
  if [ ! -x "$build_arg/apps/$app" ]; then
    echo "error: $build_arg/apps/$app missing or not executable (build the apps first)" >&2
    exit 2
  fi
done
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time is needed by bench/rss_wrap.sh" >&2; exit 2; }
[ -x /usr/bin/python3 ] || { echo "error: /usr/bin/python3 not found" >&2; exit 2; }
build_arg=$(cd "$build_arg" && pwd)

# lib.sh: root, build, out (created), stamp and the MPI environment. Its default output dir
# is docs/bench; this benchmark writes to a dated subfolder of docs/bench/whole_job.
source "$repo/bench/lib.sh" "$build_arg" "${2:-$repo/docs/bench/whole_job/$stamp0}"
out=$(cd "$out" && pwd)

SIZES=${SIZES:-"200 500 1000"}
REPEATS=${REPEATS:-3}
PEER_MAX_FRAMES=${PEER_MAX_FRAMES:-500}
PEER_TOL=${PEER_TOL:-1e-10}
DATA_DIR=${DATA_DIR:-${WORK:-/tmp}/whole_job_data}
PEERS_DIR=${PEERS_DIR:-$root/../shared/bench/peers}
RANKS=${RANKS:-"1 2"}
RUN_TIMEOUT=${RUN_TIMEOUT:-7200}

# The datasets are large: refuse a data dir inside the repository.
data_abs=$(realpath -m "$DATA_DIR")
case "$data_abs/" in
  "$root/"*) echo "error: DATA_DIR ($data_abs) is inside the repository ($root)" >&2; exit 2 ;;
esac
mkdir -p "$data_abs"

# The command as given, with the settings that shaped it, for the JSON and the report.
command="SIZES='$SIZES' REPEATS=$REPEATS PEER_MAX_FRAMES=$PEER_MAX_FRAMES PEER_TOL=$PEER_TOL"
command+=" RANKS='$RANKS'"
command+=" bash bench/whole_job/run_whole_job_bench.sh${*:+ $*}"

echo "whole-job benchmark: sizes [$SIZES] frames × 23 angles, $REPEATS repeat(s)"
echo "  build $build, data $data_abs, results $out"
status=0
/usr/bin/python3 "$here/whole_job_run.py" \
  --root "$root" --build "$build" --out "$out/whole_job.json" --data-dir "$data_abs" \
  --peers-dir "$PEERS_DIR" --sizes "$SIZES" --repeats "$REPEATS" --ranks "$RANKS" \
  --peer-max-frames "$PEER_MAX_FRAMES" --peer-tol "$PEER_TOL" --timeout "$RUN_TIMEOUT" --command "$command" \
  || status=$?
# Report whatever was measured, even when a run failed (exit 1 of whole_job_run.py).
if [ -s "$out/whole_job.json" ]; then
  /usr/bin/python3 "$here/whole_job_report.py" "$out/whole_job.json"
fi
echo "results in $out"
exit $status
