#!/usr/bin/env bash
# Checkpoint cost in an NLSQ fit (docs/checkpoints.md): the same synthetic laminar_flow fit
#   (a) checkpoints off (TAO's default LMVM preconditioner),
#   (b) checkpoints on, frequency 10^9 (the same solver path as (c), no writes),
#   (c) checkpoints on at the default frequency (10 iterations),
# each repeated; reports fit seconds (median), checkpoint writes, seconds per write and the
# overhead (c − b)/b; plus bench_checkpoint (write/read time of NLSQ-shaped records with 9,
# 53 and 207 parameters). Writes docs/bench/checkpoint_<date>.json.
#   bash bench/run_checkpoint_bench.sh [build dir] [output dir] [ranks] [frames] [repeats]
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
ranks=${3:-2}
frames=${4:-400}
repeats=${5:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
write_cfg() {  # write_cfg <file> <enable> <frequency>
  cat > "$1" <<YAML
analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {wavevector_q: 0.0054}
  geometry: {stator_rotor_gap: 2000000}
experimental_data:
  data_folder_path: $tmp
  data_file_name: data.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [15000, -0.3, 0, 0.002, 0.1, 0.0001, 2]
optimization:
  nlsq:
    anti_degeneracy: {per_angle_mode: auto}
  streaming:
    enable_checkpoints: $2
    checkpoint_dir: $tmp/ckpt
    checkpoint_frequency: $3
YAML
}
write_cfg "$tmp/off.yaml" false 10
write_cfg "$tmp/nowrite.yaml" true 1000000000
write_cfg "$tmp/default.yaml" true 10
"$build/apps/homodyne-synth" --config "$tmp/off.yaml" -o "$tmp/data.h5" --frames "$frames" \
  --angles "0,20,40,60,80,100,120,140,160" --param D0=20000 --param alpha=-0.4 \
  --param gamma_dot_t0=0.003 --param phi0=4 --noise 0.001 -q
for variant in off nowrite default; do
  for r in $(seq "$repeats"); do
    rm -rf "$tmp/ckpt"
    mpiexec -n "$ranks" "$build/apps/homodyne" --config "$tmp/$variant.yaml" -o "$tmp/out" -v \
      > "$tmp/$variant.$r.log" 2>&1
  done
done
mpiexec -n "$ranks" "$build/bench/bench_checkpoint" --benchmark_out="$tmp/micro.json" \
  --benchmark_out_format=json > /dev/null
/usr/bin/python3 - "$tmp" "$repeats" "$ranks" "$frames" "$out/checkpoint_${stamp}.json" <<'PY'
import json, re, socket, statistics, sys
tmp, repeats, ranks, frames, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
res = {}
for v in ("off", "nowrite", "default"):
    fits, writes, wsec, iters = [], [], [], []
    for r in range(1, repeats + 1):
        log = open(f"{tmp}/{v}.{r}.log").read()
        m = re.search(r"iterations\s+(\d+)\s+\(data passes (\d+), ([0-9.]+) s\)", log)
        iters.append(int(m.group(1))); fits.append(float(m.group(3)))
        w = re.search(r"(\d+) checkpoint\(s\) written in ([0-9.]+) s", log)
        writes.append(int(w.group(1)) if w else 0); wsec.append(float(w.group(2)) if w else 0.0)
    res[v] = {"fit_seconds_median": statistics.median(fits), "fit_seconds": fits,
              "iterations": iters[0], "checkpoint_writes": writes[0],
              "checkpoint_write_seconds_total_median": statistics.median(wsec)}
d = res["default"]
per_write = d["checkpoint_write_seconds_total_median"] / max(d["checkpoint_writes"], 1)
summary = {
    "benchmark": "NLSQ fit with checkpoints (laminar_flow, 9 angles, auto per-angle mode)",
    "ranks": ranks, "frames": frames, "repeats": repeats,
    "variants": res,
    "seconds_per_checkpoint_write": per_write,
    "overhead_default_frequency": (d["fit_seconds_median"] - res["nowrite"]["fit_seconds_median"]) / res["nowrite"]["fit_seconds_median"],
    "write_share_of_fit_default_frequency": d["checkpoint_write_seconds_total_median"] / d["fit_seconds_median"],
    "goal": "overhead <= 0.02",
    "bench_checkpoint_ms": {b["name"]: round(b["real_time"], 3)
                            for b in json.load(open(f"{tmp}/micro.json"))["benchmarks"]},
    "host": socket.gethostname(),
    "load_average": open("/proc/loadavg").read().split()[:3],
}
json.dump(summary, open(path, "w"), indent=2)
print(json.dumps(summary, indent=2))
PY
