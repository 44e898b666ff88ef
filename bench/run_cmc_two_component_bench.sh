#!/usr/bin/env bash
# Two-component CMC at beamline size (issue #43): a 6-angle × 120-frame two-component set with a
# constant sample fraction (f1 = f2 = 0, the common case), `--method both` from a start 10 % off
# the truth, CMC with its defaults (5 shards × 4 chains × (500 warmup + 1500 draws)) unless
# CMC_ARGS says otherwise, at 2 ranks. Records per shard the depth-cap share, min bulk/tail ESS,
# R-hat, step size and gradients; the whole job's wall time; the longest gap between two log
# lines while sampling (the output is a pipe, not a terminal). One JSON and one Markdown table.
#   bash bench/run_cmc_two_component_bench.sh [build dir] [output dir]
#   CMC_ARGS="--n-warmup 100 --n-samples 100 --cmc-num-shards 3" ... (a shorter run)
#   EXTRA_YAML: appended to the fit's config (e.g. an optimization.cmc block)
#   KEEP_OUT: a directory to keep the job's outputs and stamped log in
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
name=${BENCH_NAME:-cmc_two_component_${stamp}}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
write_cfg() {  # write_cfg FILE VALUES
  {
    write_two_component_head "$work/het.h5" "$2"
    cat <<YAML
parameter_space:
  bounds:
    - {name: v_beta, min: -1.0, max: 2.0}
${EXTRA_YAML:-}
YAML
  } > "$1"
}
# The set: the truth of tests/cli/test_cmc_two_component_hold.sh, the start 10 % off it.
truth="[3000, 0.3, 20, 20000, -0.3, 50, 300, 0.6, 2, 0.35, 0.0, 0.0, 0.05, 2.0]"
start="[3300, 0.27, 18, 18000, -0.33, 55, 320, 0.55, 2.2, 0.33, 0.0, 0.0, 0.055, 1.5]"
angles="0,30,60,90,120,150" frames=120 noise=0.002 seed=11
write_cfg "$work/truth.yaml" "$truth"
write_cfg "$work/fit.yaml" "$start"
"$build/apps/homodyne-synth" --config "$work/truth.yaml" -o "$work/het.h5" --frames "$frames" \
  --angles "$angles" --noise "$noise" --seed "$seed" -q
# Each log line is stamped as it arrives (the job's output is a pipe).
set +e
# shellcheck disable=SC2086
mpiexec -n 2 "$build/apps/homodyne" --config "$work/fit.yaml" -o "$work/out" --method both \
  ${CMC_ARGS:-} 2>&1 | /usr/bin/python3 -u -c '
import sys, time
t0 = time.monotonic()
for line in sys.stdin:
    print(f"{time.monotonic() - t0:.3f} {line}", end="")
' > "$work/log"
rc=${PIPESTATUS[0]}
set -e
# KEEP_OUT=DIR: keep the job's outputs and log there (the work directory is removed on exit).
if [[ -n ${KEEP_OUT:-} ]]; then mkdir -p "$KEEP_OUT" && cp -r "$work/out" "$work/log" "$KEEP_OUT/"; fi
/usr/bin/python3 - "$work" "$rc" "$out/$name" "${CMC_ARGS:-}" "${EXTRA_YAML:-}" "$truth" \
  "$angles" "$frames" "$noise" "$seed" <<'PY'
import json, os, platform, subprocess, sys
work, rc, base, cmc_args, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
truth, angles = json.loads(sys.argv[6]), json.loads("[" + sys.argv[7] + "]")
frames, noise, seed = int(sys.argv[8]), float(sys.argv[9]), int(sys.argv[10])
lines = [l.split(" ", 1) for l in open(work + "/log")]
stamps = [(float(t), text.rstrip("\n")) for t, text in lines]
sampling = [t for t, text in stamps if text.startswith("CMC: shard")]
gaps = [b - a for a, b in zip(sampling, sampling[1:])]
shards = json.load(open(work + "/out/cmc/shard_diagnostics.json"))
rows = []
for s in shards:
    rows.append({
        "shard": s["shard"], "points": s["points"],
        "depth_cap_share": s["treedepth_saturation_rate"],
        "min_ess_bulk": min(s["ess_bulk"].values()), "min_ess_tail": min(s["ess_tail"].values()),
        "worst_bulk": min(s["ess_bulk"], key=s["ess_bulk"].get),
        "worst_tail": min(s["ess_tail"], key=s["ess_tail"].get),
        "ess_bulk": s["ess_bulk"], "ess_tail": s["ess_tail"],
        "max_r_hat": s["max_r_hat"], "step_size": s["step_size_mean"],
        "divergences": s["divergences"], "gradients": s["gradient_evaluations"],
        "warmup_gradients": s["warmup_gradient_evaluations"],
        "sampling_seconds": s["sampling_seconds"], "coordinates": s["coordinates"]})
sampling_line = next((text for _, text in stamps if "sampling log contrast" in text), "")
report = {
    "benchmark": "two-component CMC, 6 angles x 120 frames, constant sample fraction, 2 ranks",
    "data": {"angles": angles, "frames": frames, "dt": 0.1, "q": 0.0054, "noise": noise,
             "seed": seed, "truth": truth},
    "cmc_args": cmc_args or "(defaults)", "extra_yaml": extra,
    "exit_code": rc, "whole_job_seconds": stamps[-1][0] if stamps else None,
    "sampling_log_lines": len(sampling),
    "longest_gap_between_sampling_lines_seconds": max(gaps) if gaps else None,
    "coordinates": sampling_line,
    "holds": [text for _, text in stamps if " held at its start" in text],
    "shards": rows,
    "git": subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(base)), "rev-parse",
                           "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "load_average": os.getloadavg(), "machine": platform.processor() or platform.machine(),
}
json.dump(report, open(base + ".json", "w"), indent=2)
with open(base + ".md", "w") as f:
    f.write(f"# {report['benchmark']}\n\nCMC: {report['cmc_args']}; exit {rc}; whole job "
            f"{report['whole_job_seconds']:.1f} s; longest gap between sampling log lines "
            f"{report['longest_gap_between_sampling_lines_seconds']} s; load average at the end "
            f"{report['load_average'][0]:.2f}.\n\n")
    f.write("| shard | points | depth-cap share | min bulk ESS (worst) | min tail ESS | max R-hat | "
            "step | divergences | gradients | seconds |\n|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r['shard']} | {r['points']} | {100 * r['depth_cap_share']:.1f} % | "
                f"{r['min_ess_bulk']:.0f} ({r['worst_bulk']}) | {r['min_ess_tail']:.0f} ({r['worst_tail']}) | "
                f"{r['max_r_hat']:.3f} | {r['step_size']:.3g} | {r['divergences']} | "
                f"{r['gradients']} | {r['sampling_seconds']:.0f} |\n")
print(open(base + ".md").read())
PY
