#!/usr/bin/env python3
"""Cost of fitted_data.h5 by output level and compression, from whole homodyne runs.

    output_levels.py BUILD_DIR CONFIG OUT_DIR [--ranks 2] [--repeats 3]

CONFIG is a homodyne config (its data file must exist). Each run is a local fit only
(recovery off, hierarchical stage off), so that the fit is short and the output's share
plain; the runs of one repeat alternate the variants so that machine noise hits all alike.
Writes OUT_DIR/output_levels.json and OUT_DIR/output_levels.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

VARIANTS = [  # (name, output section)
    ("full, deflate 4", {"fitted_data": "full", "compress_hdf5": True, "compression_level": 4}),
    ("full, uncompressed", {"fitted_data": "full", "compress_hdf5": False}),
    ("model, deflate 4", {"fitted_data": "model", "compress_hdf5": True, "compression_level": 4}),
    ("model, uncompressed (default)", {"fitted_data": "model", "compress_hdf5": False}),
    ("none", {"fitted_data": "none"}),
]


def run(build, cfg, output, ranks, work):
    c = dict(cfg)
    c["output"] = dict(cfg.get("output") or {}, **output)
    nlsq = c.setdefault("optimization", {}).setdefault("nlsq", {})
    nlsq["recovery"] = {"on_stall": "none", "phi0_restarts": 0}
    nlsq.setdefault("anti_degeneracy", {})["hierarchical"] = {"enable": False}
    path = os.path.join(work, "cfg.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(c, f)
    out = os.path.join(work, "out")
    subprocess.run(["rm", "-rf", out], check=True)
    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe", os.path.join(build, "apps", "homodyne"),
           "--config", path, "--output-dir", out, "-q"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    rep = yaml.safe_load(open(os.path.join(out, "run_report.yaml")))
    t = {k: v["max"] for k, v in rep["timing_seconds"].items()}
    fd = os.path.join(out, "nlsq", "fitted_data.h5")
    return {"wall": wall, "phases": t, "file_bytes": os.path.getsize(fd) if os.path.exists(fd) else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("config")
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    cfg = yaml.safe_load(open(a.config))
    os.makedirs(a.out, exist_ok=True)
    runs = {name: [] for name, _ in VARIANTS}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(a.repeats):
            for name, output in VARIANTS:
                runs[name].append(run(a.build, cfg, output, a.ranks, work))
    rows = []
    for name, _ in VARIANTS:
        r = runs[name]
        med = lambda f: statistics.median(f(x) for x in r)
        fit = med(lambda x: x["phases"].get("initial_scaling", 0) + x["phases"].get("fit", 0))
        rows.append({"variant": name, "runs": r, "wall_median_s": med(lambda x: x["wall"]),
                     "write_fitted_data_median_s": med(lambda x: x["phases"].get("write_fitted_data", 0.0)),
                     "initial_scaling_plus_fit_median_s": fit,
                     "whole_over_scaling_plus_fit": med(lambda x: x["wall"]) / fit,
                     "file_bytes": r[-1]["file_bytes"]})
    git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                          "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"benchmark": "fitted_data.h5 cost by output level", "config": a.config,
           "ranks": a.ranks, "repeats": a.repeats, "git": git,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "variants": rows}
    json.dump(doc, open(os.path.join(a.out, "output_levels.json"), "w"), indent=2)
    with open(os.path.join(a.out, "output_levels.md"), "w") as f:
        f.write(f"fitted_data.h5 by level, {a.ranks} rank(s), local fit, median of {a.repeats} "
                f"(git {git})\n\n| variant | whole job (s) | write_fitted_data (s) | "
                "whole / (initial scaling + fit) | file (MB) |\n|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['variant']} | {r['wall_median_s']:.2f} | "
                    f"{r['write_fitted_data_median_s']:.2f} | "
                    f"{r['whole_over_scaling_plus_fit']:.2f} | {r['file_bytes'] / 1e6:.0f} |\n")
    print(open(os.path.join(a.out, "output_levels.md")).read())


if __name__ == "__main__":
    main()
