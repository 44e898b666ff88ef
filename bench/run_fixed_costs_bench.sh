#!/usr/bin/env bash
# Fixed costs of a whole job, item by item (issue 43): everything a `homodyne --method nlsq`
# job pays besides its fit, at 1 rank (no launcher, and under mpiexec) and at 2 ranks.
#
#   bash bench/run_fixed_costs_bench.sh [build dir] [output dir]
#        (defaults: build, docs/bench; writes fixed_costs_<date>.json)
#
# Data: laminar_flow, 23 angles x FRAMES frames from homodyne-synth (seeded), the whole-job
# benchmark's config (bench/whole_job/whole_job_run.py), started at the truth, default
# pipeline. Each run's items come from its closing "fixed costs" log line (rank 0: start-up,
# phases that are not fitting, the report, PETSc and MPI finalisation) and its wall time is
# taken from outside. The variants alternate within every repeat, so that machine load hits
# them alike:
#   before        BEFORE_BUILD's homodyne (a build of the commit before the change measured),
#                 when BEFORE_BUILD is set
#   after         this build's homodyne
#   petsc_at_start  this build, PETSc loaded and started with MPI as before it was loaded on
#                 demand (a harmless PETSc option, PETSC_OPTIONS=-no_signal_handler, asks for it)
#   hwloc_full    this build, hwloc's PCI and I/O discovery and plugins left on (the variables
#                 homodyne would set given empty, which hwloc reads as unset)
# Rows with output.fitted_data none keep the data-sized output files out; one row per variant
# with the default outputs (fitted_data.h5 and .npz) shows what writing them costs.
#
# Parameters (environment): FRAMES (200), REPEATS (5; medians and every value are kept),
# DATA_DIR (scratch; ${WORK:-/tmp}/fixed_costs_data), BENCH_STAMP (date part of the name),
# BEFORE_BUILD (a build directory of the baseline; unset: no "before" rows).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
for app in homodyne homodyne-synth homodyne-config; do
  [ -x "$build/apps/$app" ] || { echo "error: $build/apps/$app missing (build the apps)" >&2; exit 2; }
done
FRAMES=${FRAMES:-200}
REPEATS=${REPEATS:-5}
DATA_DIR=${DATA_DIR:-${WORK:-/tmp}/fixed_costs_data}
mkdir -p "$DATA_DIR"
export BENCH_ROOT=$root BENCH_BUILD=$build BENCH_DATA_DIR=$DATA_DIR FRAMES REPEATS
export BENCH_BEFORE_BUILD=${BEFORE_BUILD:-}
export BENCH_JSON="$out/fixed_costs_${stamp}.json"
python3 - <<'EOF'
import json, os, re, statistics, subprocess, sys, time
root, build, data_dir = os.environ["BENCH_ROOT"], os.environ["BENCH_BUILD"], os.environ["BENCH_DATA_DIR"]
frames, repeats = int(os.environ["FRAMES"]), int(os.environ["REPEATS"])
sys.path.insert(0, os.path.join(root, "bench", "whole_job"))
import whole_job_run as w  # the whole-job benchmark's config and dataset
import yaml

data = os.path.join(data_dir, f"laminar_23x{frames}.h5")
cfg_default = os.path.join(data_dir, "default.yaml")
cfg_nofd = os.path.join(data_dir, "no_fitted_data.yaml")
base = w.base_config(data)
w.write_config(cfg_default, base, build)
nofd = w.base_config(data)
nofd["output"] = {"fitted_data": "none"}
w.write_config(cfg_nofd, nofd, build)
angles = ",".join(f"{a:.10g}" for a in w.angles_deg())
subprocess.run([f"{build}/apps/homodyne-synth", "--config", cfg_default, "-o", data, "--frames",
                str(frames), "--angles", angles, "--contrast", str(w.CONTRAST), "--offset",
                str(w.OFFSET), "--noise", str(w.NOISE), "--seed", str(w.SEED), "--force", "-q"],
               check=True)



before_build = os.environ.get("BENCH_BEFORE_BUILD") or None
# variant: (build directory of its homodyne, environment it adds)
VARIANTS = {"after": (build, {}),
            "petsc_at_start": (build, {"PETSC_OPTIONS": "-no_signal_handler"}),
            "hwloc_full": (build, {"HWLOC_COMPONENTS": "", "HWLOC_PLUGINS_BLACKLIST": ""})}
if before_build:
    VARIANTS = dict({"before": (before_build, {})}, **VARIANTS)
LAUNCHERS = {"1 rank, no launcher": [], "1 rank, mpiexec": ["mpiexec", "-n", "1"],
             "2 ranks, mpiexec": ["mpiexec", "-n", "2"]}
LINE = re.compile(r"fixed costs \(rank 0, s\): (.*); total ([0-9.]+) s")


def one_run(variant, launcher, config, out):
    vbuild, venv = VARIANTS[variant]
    env = dict(os.environ, **venv)
    cmd = LAUNCHERS[launcher] + [f"{vbuild}/apps/homodyne", "--config", config, "--method",
                                 "nlsq", "-o", out, "--threads", "1"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    m = LINE.search(p.stdout)
    if p.returncode != 0 or m is None:
        sys.exit(f"error: {' '.join(cmd)} exited {p.returncode} without its fixed-costs line:\n"
                 f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    items = {k: float(v) for k, v in (x.rsplit(" ", 1) for x in m.group(1).split(", "))}
    with open(os.path.join(out, "nlsq", "parameters.json")) as f:
        params = f.read()
    return {"wall": wall, "items": items, "total": float(m.group(2)),
            "chi2_text": re.search(r'"chi_squared"\s*:\s*([^,\n]+)', params).group(1)
            if '"chi_squared"' in params else None}


def version_wall(variant):
    vbuild, venv = VARIANTS[variant]
    env = dict(os.environ, **venv)
    t0 = time.perf_counter()
    subprocess.run([f"{vbuild}/apps/homodyne", "--version"], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - t0


rows = {}
for rep in range(repeats):
    for launcher in LAUNCHERS:
        for variant in VARIANTS:
            key = f"{launcher} | {variant}"
            out = os.path.join(data_dir, f"out_{variant}_{launcher.split()[0]}_{len(LAUNCHERS[launcher])}")
            rows.setdefault(key, []).append(one_run(variant, launcher, cfg_nofd, out))
            print(f"repeat {rep + 1}/{repeats} {key}: wall {rows[key][-1]['wall']:.3f} s, "
                  f"fixed {rows[key][-1]['total']:.3f} s", flush=True)
    for variant in VARIANTS:
        rows.setdefault(f"homodyne --version | {variant}", []).append({"wall": version_wall(variant)})
outputs = {}
for variant in [v for v in ("before", "after") if v in VARIANTS]:  # the default outputs, once: their writing is data-sized, not fixed
    r = one_run(variant, "1 rank, no launcher", cfg_default, os.path.join(data_dir, f"out_full_{variant}"))
    outputs[variant] = {k: r["items"].get(k) for k in
                        ("write_outputs", "write_fitted_data", "write_fitted_data_npz")}
    outputs[variant]["wall"] = r["wall"]


def med(xs):
    return statistics.median(xs) if xs else None


summary = {}
for key, runs in rows.items():
    s = {"runs": len(runs), "wall_median": med([r["wall"] for r in runs]),
         "wall_all": [round(r["wall"], 4) for r in runs]}
    if "items" in runs[0]:
        s["fixed_total_median"] = med([r["total"] for r in runs])
        s["items_median"] = {k: med([r["items"][k] for r in runs]) for k in runs[0]["items"]}
        s["chi2"] = sorted({r["chi2_text"] for r in runs if r["chi2_text"]})
    summary[key] = s
load = open("/proc/loadavg").read().split()[:3]
result = {"benchmark": "fixed costs of a whole job (bench/run_fixed_costs_bench.sh)",
          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
          "data": f"laminar_flow 23 x {frames}, homodyne-synth seed {w.SEED}, start at the truth",
          "pipeline": "default NLSQ pipeline, --method nlsq, --threads 1, output.fitted_data none",
          "variants": {k: {"build": "BEFORE_BUILD" if b == before_build else "this build",
                           "env": e} for k, (b, e) in VARIANTS.items()},
          "repeats": repeats, "loadavg_at_end": load,
          "nproc": os.cpu_count(), "rows": summary, "default_outputs_one_run": outputs}
with open(os.environ["BENCH_JSON"], "w") as f:
    json.dump(result, f, indent=1)
print(f"wrote {os.environ['BENCH_JSON']}")
for key, s in summary.items():
    extra = f", fixed {s['fixed_total_median']:.3f} s" if "fixed_total_median" in s else ""
    print(f"{key}: wall {s['wall_median']:.3f} s{extra}")
EOF
