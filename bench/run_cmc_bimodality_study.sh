#!/usr/bin/env bash
# CMC consensus against the full-data posterior on >= 20 unimodal synthetic datasets
# (laminar_flow and static, homodyne's templates, issue #38 item 4's case first), with the
# bimodality verdicts of every shard (docs/cmc.md, step 7b). Writes
# $out/cmc_bimodality_<stamp>.json and .md. OLD=<homodyne binary> also runs the rule before
# where homodyne's screen alone would split a shard.
#   bash bench/run_cmc_bimodality_study.sh [build] [out]     (about 30-60 min on 2 cores)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
old=()
[ -n "${OLD:-}" ] && old=(--old "$OLD")
/usr/bin/python3 "$root/bench/cmc_bimodality_study.py" --build "$build" \
  --out-json "$out/cmc_bimodality_$stamp.json" --out-md "$out/cmc_bimodality_$stamp.md" \
  ${WORK:+--work "$WORK"} ${FIRST:+--first "$FIRST"} "${old[@]}"
