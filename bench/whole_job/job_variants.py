#!/usr/bin/env python3
"""Whole homodyne runs of one config in several variants, side by side.

    job_variants.py BUILD_DIR CONFIG OUT_DIR --set output-levels|global-stage
                    [--ranks 2] [--repeats 3]

CONFIG is a homodyne config (its data file must exist). The runs of one repeat alternate
the variants, so that machine noise hits all alike; medians are reported.

  output-levels  the cost of fitted_data.h5 by output.fitted_data and compression; every
                 run a local fit only (recovery and the hierarchical stage off), so that the
                 output's share is plain;
  global-stage   the price of the CMA-ES stage: the local fit alone, the default pipeline,
                 CMA-ES (warmstart_auto_skip off, so that it runs after a good warm start)
                 searching on every k-th row (the default search_max_points), the same
                 without the pipeline's phi0 check, and on all points; fitted_data none.

Writes OUT_DIR/<set>.json and OUT_DIR/<set>.md.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

LOCAL = {"recovery": {"on_stall": "none", "phi0_restarts": 0},
         "anti_degeneracy": {"hierarchical": {"enable": False}}}
CMAES = {"enable": True, "warmstart_auto_skip": False}
SETS = {  # variant: (output section, optimization.nlsq settings)
    "output-levels": [
        ("full, deflate 4", {"fitted_data": "full", "compress_hdf5": True,
                             "compression_level": 4}, LOCAL),
        ("full, uncompressed", {"fitted_data": "full", "compress_hdf5": False}, LOCAL),
        ("model, deflate 4", {"fitted_data": "model", "compress_hdf5": True,
                              "compression_level": 4}, LOCAL),
        ("model, uncompressed (default)", {"fitted_data": "model", "compress_hdf5": False},
         LOCAL),
        ("none", {"fitted_data": "none"}, LOCAL),
    ],
    "global-stage": [
        ("local fit only", {"fitted_data": "none"}, LOCAL),
        ("default pipeline", {"fitted_data": "none"}, {}),
        ("CMA-ES, search on rows (default search_max_points)", {"fitted_data": "none"},
         {"cmaes": CMAES}),
        ("CMA-ES on rows, no phi0 check (the local fit's own steps)", {"fitted_data": "none"},
         {"cmaes": CMAES, "recovery": {"phi0_restarts": 0}}),
        ("CMA-ES, search on all points", {"fitted_data": "none"},
         {"cmaes": dict(CMAES, search_max_points=0)}),
    ],
}


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out.get(k) or {}, v) if isinstance(v, dict) else v
    return out


def run(build, cfg, output, nlsq_settings, ranks, work):
    c = copy.deepcopy(cfg)  # each variant from the config as given, nothing carried over
    c["output"] = dict(cfg.get("output") or {}, **output)
    c.setdefault("optimization", {})
    c["optimization"]["nlsq"] = merge(c["optimization"].get("nlsq") or {}, nlsq_settings)
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
    ap.add_argument("--set", choices=sorted(SETS), required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    cfg = yaml.safe_load(open(a.config))
    os.makedirs(a.out, exist_ok=True)
    variants = SETS[a.set]
    runs = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(a.repeats):
            for name, output, nlsq_settings in variants:
                runs[name].append(run(a.build, cfg, output, nlsq_settings, a.ranks, work))
    rows = []
    for name, _, _ in variants:
        r = runs[name]
        med = lambda f: statistics.median(f(x) for x in r)
        fit = med(lambda x: x["phases"].get("initial_scaling", 0) + x["phases"].get("fit", 0))
        search = med(lambda x: x["phases"].get("fit", 0) + x["phases"].get("cmaes", 0))
        rows.append({"variant": name, "runs": r, "wall_median_s": med(lambda x: x["wall"]),
                     "write_fitted_data_median_s": med(lambda x: x["phases"].get("write_fitted_data", 0.0)),
                     "initial_scaling_plus_fit_median_s": fit,
                     "whole_over_scaling_plus_fit": med(lambda x: x["wall"]) / fit,
                     "fit_plus_cmaes_median_s": search,
                     "file_bytes": r[-1]["file_bytes"]})
    git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                          "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    base = rows[0]["fit_plus_cmaes_median_s"]
    for r in rows:
        r["fit_plus_cmaes_over_first"] = r["fit_plus_cmaes_median_s"] / base
    doc = {"benchmark": a.set, "config": a.config, "variants_about": __doc__,
           "ranks": a.ranks, "repeats": a.repeats, "git": git,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "variants": rows}
    json.dump(doc, open(os.path.join(a.out, f"{a.set}.json"), "w"), indent=2)
    with open(os.path.join(a.out, f"{a.set}.md"), "w") as f:
        f.write(f"{a.set}: {a.config}, {a.ranks} rank(s), median of {a.repeats} (git {git})\n\n"
                "| variant | whole job (s) | fit + cmaes (s) | vs first row | "
                "write_fitted_data (s) | whole / (initial scaling + fit) | file (MB) |\n"
                "|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['variant']} | {r['wall_median_s']:.2f} | "
                    f"{r['fit_plus_cmaes_median_s']:.2f} | {r['fit_plus_cmaes_over_first']:.2f}x | "
                    f"{r['write_fitted_data_median_s']:.2f} | "
                    f"{r['whole_over_scaling_plus_fit']:.2f} | {r['file_bytes'] / 1e6:.0f} |\n")
    print(open(os.path.join(a.out, f"{a.set}.md")).read())


if __name__ == "__main__":
    main()
