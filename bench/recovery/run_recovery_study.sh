#!/usr/bin/env bash
# NLSQ recovery study, one command (docs/robustness.md):
#
#   bash bench/recovery/run_recovery_study.sh [options]
#
# Seeded synthetic datasets (homodyne-synth; half static, half laminar_flow), each fitted by
# homodyne from a start at the truth, from the default start with default settings, the same
# with checkpoints, and with CMA-ES on; every fit's χ² is compared with the dataset's
# reference minimum (the best of all its fits). Writes OUT/recovery.{json,md,png} and prints
# the Markdown table.
#
# Options (the rest go to recovery_study.py; --help lists them all):
#   --build DIR      build directory (default: build/ of this repository)
#   --out DIR        output directory (default: docs/bench/recovery/<UTC date>, or
#                    $BENCH_STAMP instead of the date, as the other bench scripts)
#   --datasets N     number of datasets (default 50)     --seed S       (default 2026)
#   --ranks R        MPI ranks per fit (default 1)        --configs a,b  (default: all four)
#   --variant NAME:key=value[,key=value]   an extra default-start configuration
#   --update-doc docs/robustness.md        put this run's table into the document
#   --from-json OUT/recovery.json          run nothing: print (and with --update-doc, put
#                                          into the document) the table of an earlier run
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
out=$root/docs/bench/recovery/${BENCH_STAMP:-$(date -u +%Y-%m-%d)}
args=()
from_json=false
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --from-json) from_json=true; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
# Debian's python3 has numpy, PyYAML and matplotlib (scripts/install-deps.sh); another
# python3 first on PATH may not.
py=${PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import numpy, yaml, matplotlib' 2>/dev/null; then
  echo "error: $py lacks numpy, yaml or matplotlib (install python3-numpy python3-yaml" \
       "python3-matplotlib, or set PYTHON to an interpreter that has them)" >&2
  exit 2
fi
# --from-json only re-renders an earlier run's table: no build, no MPI.
if $from_json; then exec "$py" "$root/bench/recovery/recovery_study.py" "${args[@]}"; fi
[ -x "$build/apps/homodyne" ] || {
  echo "error: $build/apps/homodyne not found; build first (bash scripts/build.sh) or pass --build" >&2
  exit 2
}
source "$root/scripts/mpi-env.sh"
exec "$py" "$root/bench/recovery/recovery_study.py" --bin-dir "$build/apps" --out "$out" \
  ${args[@]+"${args[@]}"}
