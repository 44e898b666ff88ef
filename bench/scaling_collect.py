#!/usr/bin/python3
"""One scaling run → one JSON: configuration, time per phase (min/max/mean across ranks,
from the run's run_report.yaml), peak RSS per rank (bench/rss_wrap.sh), the fitted
parameters (nlsq/parameters.json, cmc/parameters.json) for the cross-run deltas.

Phases: load = distributed read of the rank's blocks; partition = "setup" (layout,
bounds, the least-squares problem over the rank's row tiles); fit = initial scaling + the
optimiser; sample = CMC; write = outputs. Unknown phases are kept under phases_raw."""
import argparse
import glob
import json
import os
import platform
import re

import yaml

PHASES = {"load": ["load"], "partition": ["setup"], "fit": ["initial_scaling", "fit"],
          "sample": ["cmc"], "write": ["write_outputs", "write_fitted_data"]}


def flatten(prefix, obj, out):
    """Every number in a parameters.json as name → value (per-angle lists indexed)."""
    if isinstance(obj, dict):
        if "value" in obj and isinstance(obj["value"], (int, float)):
            out[prefix] = float(obj["value"])
            return
        for k, v in obj.items():
            flatten(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            flatten(f"{prefix}[{i}]", v, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--kind", required=True)  # nlsq_passes | nlsq_fit | cmc
    ap.add_argument("--study", required=True)  # strong | weak
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--wall-seconds", type=float, default=None)
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--points-from", default=None,
                    help="run directory whose run_report.yaml gives the fitted points (CMC runs "
                         "started from an NLSQ result have no data section of their own)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    rep = yaml.safe_load(open(os.path.join(a.run_dir, "run_report.yaml")))
    timing = rep.get("timing_seconds", {})
    phases = {}
    for name, keys in PHASES.items():
        parts = [timing[k] for k in keys if k in timing]
        if parts:
            # Sum of phases per statistic (an upper bound of the max of the sum).
            phases[name] = {s: sum(p[s] for p in parts) for s in ("min", "max", "mean")}
    rss = {}
    for f in glob.glob(os.path.join(a.run_dir, "rss", "rank_*.kib")):
        txt = open(f).read().strip().splitlines()
        nums = [l for l in txt if re.fullmatch(r"\d+", l.strip())]
        if nums:
            rss[int(re.search(r"rank_(\d+)", f).group(1))] = int(nums[-1])
    params = {}
    for sub in ("nlsq", "cmc"):
        p = os.path.join(a.run_dir, sub, "parameters.json")
        if os.path.exists(p):
            flat = {}
            flatten("", json.load(open(p)).get("parameters", {}), flat)
            pa = json.load(open(p)).get("per_angle")
            if pa:
                flatten("per_angle", pa, flat)
            params[sub] = flat
    data = rep.get("data", {})
    if not data and a.points_from:
        data = yaml.safe_load(open(os.path.join(a.points_from, "run_report.yaml"))).get("data", {})
    thr = rep.get("throughput", {})
    run = {
        "kind": a.kind, "study": a.study, "ranks": a.ranks, "threads": a.threads,
        "nodes": a.nodes, "cores": a.ranks * a.threads,
        "exit_code": a.exit_code,
        "status": rep.get("status", {}).get("result"),
        "points": data.get("fitted_points"), "angles": len(data.get("phi_deg", []) or []),
        "frames": data.get("frames"),
        "data_passes": thr.get("data_passes"), "iterations": thr.get("iterations"),
        "phases": phases, "phases_raw": timing,
        "wall_seconds": a.wall_seconds,
        "peak_rss_kib_per_rank": [rss[k] for k in sorted(rss)],
        "parameters": params,
        "placement": rep.get("machine", {}).get("placement"),
        "host": platform.node(), "command_line": rep.get("homodyne_hpc", {}).get("command_line"),
    }
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    json.dump(run, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
