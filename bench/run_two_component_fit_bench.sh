#!/usr/bin/env bash
# The whole two-component NLSQ job (homodyne --config, default outputs) on a synthetic dataset
# of 23 angles x 1000 frames (11.5 M fitted pairs), at 2 ranks x 1 thread and at 1 rank x 2
# threads (both cores), the two runs in turn, PAIRS pairs. Writes
# $out/two_component_fit_<stamp>.json: per run its wall time, peak RSS (largest rank), chi2,
# iterations and status; per layout the medians; the pair-by-pair wall ratio 2 ranks / 1 rank.
#   bash bench/run_two_component_fit_bench.sh [build] [out]      (PAIRS=3 by default)
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
pairs=${PAIRS:-3}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
py=/usr/bin/python3

# The truth and perturbed start of tests/cli/test_two_component.sh; f2 is held (f0 and f2 are
# one parameter of the model).
write_cfg() {  # write_cfg <file> <values>
  {
    write_two_component_head "$work/het.h5" "$2"
    cat <<YAML
  active_parameters: [D0_ref, alpha_ref, D_offset_ref, D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f3, phi0_het]
parameter_space:
  bounds:
    - {name: v_beta, min: -1.0, max: 2.0}
YAML
  } > "$1"
}
write_cfg "$work/truth.yaml" "[3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.3, 0.0, 0.05, 2.0]"
write_cfg "$work/fit.yaml" "[3300, 0.27, 18, 18000, -0.33, 55, 320, 0.55, 2.2, 0.33, 0.32, 0.0, 0.055, 1.5]"
angles=$(seq -s, 0 8 176)
"$build/apps/homodyne-synth" --config "$work/truth.yaml" -o "$work/het.h5" --frames 1000 \
  --angles "$angles" --noise 0.002 --seed 3 -q

declare -A cmd
cmd[2ranks]="mpiexec -n 2 $root/bench/rss_wrap.sh DIR $build/apps/homodyne --config $work/fit.yaml -o DIR/out --threads 1 -q"
cmd[1rank_2threads]="mpiexec -n 1 --map-by slot:PE=2 --bind-to core $root/bench/rss_wrap.sh DIR $build/apps/homodyne --config $work/fit.yaml -o DIR/out --threads 2 -q"
records="$work/records.jsonl"
: > "$records"
for ((p = 1; p <= pairs; ++p)); do
  for layout in 2ranks 1rank_2threads; do
    dir="$work/run_${layout}_$p"
    mkdir -p "$dir"
    start=$(date +%s.%N)
    rc=0
    ${cmd[$layout]//DIR/$dir} > "$dir/log.txt" 2>&1 || rc=$?
    end=$(date +%s.%N)
    "$py" - "$dir" "$layout" "$p" "$start" "$end" "$rc" >> "$records" <<'PY'
import glob, json, os, sys
d, layout, pair, start, end, rc = sys.argv[1:]
rss = [int(open(f).read().split()[-1]) for f in glob.glob(os.path.join(d, "rss", "*.kib"))]
rec = {"layout": layout, "pair": int(pair), "wall_seconds": float(end) - float(start),
       "exit_code": int(rc), "peak_rss_mib": max(rss) / 1024 if rss else None}
try:
    r = json.load(open(os.path.join(d, "out", "nlsq", "parameters.json")))
    a = json.load(open(os.path.join(d, "out", "nlsq", "analysis_results_nlsq.json")))
    rec.update(chi_squared=r.get("chi_squared"),
               status=a["optimization_summary"]["convergence_status"],
               iterations=a["optimization_summary"]["iterations"])
except (OSError, ValueError, KeyError):
    pass
print(json.dumps(rec))
PY
    echo "pair $p $layout: $(tail -1 "$records")"
  done
done

"$py" - "$records" "$out/two_component_fit_${stamp}.json" "$pairs" <<'PY'
import datetime, json, os, platform, statistics, sys
records = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in records:
    by.setdefault(r["layout"], []).append(r)
summary = {}
for k, rs in by.items():
    summary[k] = {"median_wall_seconds": statistics.median(r["wall_seconds"] for r in rs),
                  "min_wall_seconds": min(r["wall_seconds"] for r in rs),
                  "max_wall_seconds": max(r["wall_seconds"] for r in rs),
                  "median_peak_rss_mib": statistics.median(r["peak_rss_mib"] or 0 for r in rs)}
ratios = [a["wall_seconds"] / b["wall_seconds"]
          for a, b in zip(by["2ranks"], by["1rank_2threads"])]
doc = {"benchmark": "two_component_fit_23x1000",
       "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
       "host": platform.node(), "cpus": os.cpu_count(), "pairs": int(sys.argv[3]),
       "runs": records, "summary": summary,
       "ratio_2ranks_over_1rank": {"median": statistics.median(ratios), "min": min(ratios),
                                   "max": max(ratios), "pairs": ratios}}
json.dump(doc, open(sys.argv[2], "w"), indent=1)
print(json.dumps({"summary": summary, "ratio": doc["ratio_2ranks_over_1rank"]}, indent=1))
PY
