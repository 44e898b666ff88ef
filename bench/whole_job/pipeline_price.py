#!/usr/bin/env python3
"""The default NLSQ pipeline's price against the local fit alone, two builds side by side.

    pipeline_price.py --before BUILD --after BUILD --out OUT.json CONFIG [CONFIG ...]
                      [--ranks 2] [--repeats 3]

Each CONFIG is a homodyne config whose data file exists (its output section is replaced by
fitted_data: none). For every repeat and config the runs alternate: the local fit alone
(optimization.nlsq.recovery on_stall none, phi0_restarts 0, the hierarchical stage off; the
`after` build), the default pipeline of the `before` build, the default pipeline of the
`after` build, so that machine noise hits all alike. Per run it keeps the whole job's wall
time, the run report's phase times (max over ranks), data passes, iterations, chi2, status
and recovery actions; per variant the medians, and the pipeline's fit time over the local
fit's. Writes OUT.json and OUT.md (the table).
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


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out.get(k) or {}, v) if isinstance(v, dict) else v
    return out


def run(build, cfg, nlsq_settings, ranks, work):
    c = copy.deepcopy(cfg)
    c["output"] = {"fitted_data": "none"}
    c.setdefault("optimization", {})
    c["optimization"]["nlsq"] = merge(c["optimization"].get("nlsq") or {}, nlsq_settings)
    path = os.path.join(work, "cfg.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(c, f)
    out = os.path.join(work, "out")
    subprocess.run(["rm", "-rf", out], check=True)
    cmd = ["mpiexec", "-n", str(ranks), "--oversubscribe",
           os.path.join(build, "apps", "homodyne"), "--config", path, "--output-dir", out, "-q"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 4, 5):  # 4, 5: a stalled or misfit answer, still a result
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    rep = yaml.safe_load(open(os.path.join(out, "run_report.yaml")))
    thr = rep.get("throughput") or {}
    return {"wall": wall, "exit": p.returncode,
            "phases": {k: v["max"] for k, v in rep["timing_seconds"].items()},
            "data_passes": thr.get("data_passes"), "iterations": thr.get("iterations"),
            "chi_squared": (rep.get("loss") or {}).get("chi_squared"),
            "status": (rep.get("status") or {}).get("result"), "recovery_actions": rep.get("recovery_actions") or []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    variants = [("local fit alone", a.after, LOCAL), ("default pipeline, before", a.before, {}),
                ("default pipeline, after", a.after, {})]
    runs = {(c, v[0]): [] for c in a.configs for v in variants}
    with tempfile.TemporaryDirectory() as work:
        for rep in range(a.repeats):
            for c in a.configs:
                cfg = yaml.safe_load(open(c))
                for name, build, settings in variants:
                    r = run(build, cfg, settings, a.ranks, work)
                    runs[(c, name)].append(r)
                    print(f"[{rep + 1}/{a.repeats}] {os.path.basename(c)} | {name}: wall "
                          f"{r['wall']:.2f} s, fit {r['phases'].get('fit', 0):.2f} s, "
                          f"{r['data_passes']} passes", flush=True)
    rows = []
    for c in a.configs:
        local_fit = statistics.median(x["phases"].get("fit", 0) for x in runs[(c, variants[0][0])])
        for name, build, _ in variants:
            r = runs[(c, name)]
            med = lambda f: statistics.median(f(x) for x in r)
            fit = med(lambda x: x["phases"].get("fit", 0))
            rows.append({"config": c, "variant": name, "build": build, "runs": r,
                         "wall_median_s": med(lambda x: x["wall"]), "fit_median_s": fit,
                         "fit_over_local_fit": fit / local_fit if local_fit > 0 else None,
                         "data_passes_median": med(lambda x: x["data_passes"] or 0),
                         "chi_squared": r[-1]["chi_squared"], "status": r[-1]["status"]})
    git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                          "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    uptime = open("/proc/loadavg").read().split()[:3]
    doc = {"benchmark": "pipeline-price", "about": __doc__, "ranks": a.ranks,
           "repeats": a.repeats, "git": git, "before": a.before, "after": a.after,
           "load_average_at_end": uptime,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
    json.dump(doc, open(a.out, "w"), indent=1)
    md = os.path.splitext(a.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(f"pipeline price: {a.ranks} rank(s), medians of {a.repeats} alternating runs "
                f"(git {git}; load average at the end {' '.join(uptime)})\n\n"
                "| config | variant | whole job (s) | fit (s) | fit / local fit | data passes | "
                "chi2 |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {os.path.basename(r['config'])} | {r['variant']} | "
                    f"{r['wall_median_s']:.2f} | {r['fit_median_s']:.2f} | "
                    f"{r['fit_over_local_fit']:.2f}x | {r['data_passes_median']:.0f} | "
                    f"{r['chi_squared']:.10g} |\n")
    print(open(md).read())


if __name__ == "__main__":
    main()
