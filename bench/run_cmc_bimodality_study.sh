#!/usr/bin/env bash
# CMC consensus against the full-data posterior on >= 20 unimodal synthetic datasets
# (laminar_flow and static, homodyne's templates, issue #38 item 4's case first), with the
# bimodality verdicts of every shard (docs/cmc.md, step 7b), against a full-data reference
# sampled by one long run whose own R-hat, ESS and divergences decide whether it counts.
# Writes $out/cmc_bimodality_<stamp>.json and .md. OLD=<homodyne binary> also runs the rule
# before where homodyne's screen alone would split a shard. WORK=<dir> keeps the runs (and
# reuses those already there); FIRST=<i,j,...> runs those datasets first; ONLY=<i,j,...> runs
# those and no others. N_WARMUP, N_SAMPLES: the shards' draws per chain (default 300 + 600;
# the templates' own are 500 + 1500).
#   bash bench/run_cmc_bimodality_study.sh [build] [out]
# (the references of the hard laminar datasets take 20-60 min each on a loaded 2-core machine)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
old=()
[ -n "${OLD:-}" ] && old=(--old "$OLD")
/usr/bin/python3 "$root/bench/cmc_bimodality_study.py" --build "$build" \
  --out-json "$out/cmc_bimodality_$stamp.json" --out-md "$out/cmc_bimodality_$stamp.md" \
  ${WORK:+--work "$WORK"} ${FIRST:+--first "$FIRST"} ${ONLY:+--only "$ONLY"} \
  ${N_WARMUP:+--n-warmup "$N_WARMUP"} ${N_SAMPLES:+--n-samples "$N_SAMPLES"} "${old[@]}"
