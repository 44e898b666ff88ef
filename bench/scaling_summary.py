#!/usr/bin/python3
"""Scaling summary: OUT/runs/*.json (bench/scaling_collect.py) → OUT/summary.json with
speedup and efficiency per run and the parameter deltas against the 1-rank, 1-thread run
of the same kind. Exits 1 if a strong-scaling run's parameters differ from the 1-rank
run's by more than 1e-10 (relative), or if a run failed.

  /usr/bin/python3 bench/scaling_summary.py OUT"""
import glob
import json
import os
import platform
import subprocess
import sys

TOLERANCE = 1e-10


def metric(run):
    """The timed work of a run: sampling for CMC, else the fit (per data pass for the
    NLSQ-pass study); slowest rank."""
    ph = run["phases"]
    if run["kind"] == "cmc":
        return ph["sample"]["max"]
    t = ph["fit"]["max"]
    if run["kind"] == "nlsq_passes":
        return t / max(1, run["data_passes"] or 1)
    return t


def max_relative_delta(params, base):
    worst, where = 0.0, None
    for sub, values in base.items():
        for name, v0 in values.items():
            v = params.get(sub, {}).get(name)
            if v is None:
                return float("inf"), f"{sub}:{name} missing"
            d = abs(v - v0) / abs(v0) if v0 != 0 else abs(v - v0)
            if d > worst:
                worst, where = d, f"{sub}:{name}"
    return worst, where


def machine():
    m = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "Thread(s) per core", "Core(s) per socket",
                             "Socket(s)", "NUMA node(s)", "L3 cache", "CPU max MHz"):
                m[k.strip()] = v.strip()
    except OSError:
        pass
    try:
        m["mpi"] = subprocess.run(["mpiexec", "--version"], capture_output=True,
                                  text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    return m


def main():
    out = sys.argv[1]
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, "runs", "*.json")))]
    if not runs:
        sys.exit(f"no runs in {out}/runs")
    problems = []
    studies = {}
    for r in runs:
        studies.setdefault((r["kind"], r["study"]), []).append(r)
    summary = {"machine": machine(), "tolerance_relative": TOLERANCE, "studies": []}
    note = os.path.join(out, "NOTE.txt")
    if os.path.exists(note):
        summary["note"] = open(note).read().strip()
    for (kind, study), rs in sorted(studies.items()):
        rs.sort(key=lambda r: (r["ranks"] * r["threads"] * r.get("nodes", 1), r["ranks"]))
        base = next((r for r in rs if r["ranks"] == 1 and r["threads"] == 1), rs[0])
        t0 = metric(base)
        entries = []
        for r in rs:
            if r["exit_code"] not in (0,) and not (kind == "nlsq_passes" and r["exit_code"] == 1):
                problems.append(f"{kind}/{study} ranks={r['ranks']} threads={r['threads']}: "
                                f"exit code {r['exit_code']}")
            t = metric(r)
            scale = r["cores"] / base["cores"]
            e = {"ranks": r["ranks"], "threads": r["threads"], "nodes": r.get("nodes", 1),
                 "cores": r["cores"], "points": r["points"], "seconds": t,
                 "phases": r["phases"], "wall_seconds": r["wall_seconds"],
                 "peak_rss_mib_per_rank": [k / 1024 for k in r["peak_rss_kib_per_rank"]]}
            if study == "strong":
                e["speedup"] = t0 / t if t > 0 else None
                e["efficiency"] = e["speedup"] / scale if e["speedup"] else None
                d, where = max_relative_delta(r["parameters"], base["parameters"])
                e["max_relative_parameter_delta"] = d
                e["worst_parameter"] = where
                if not d <= TOLERANCE:
                    problems.append(f"{kind}/strong ranks={r['ranks']} threads={r['threads']}: "
                                    f"parameter {where} differs by {d:.3g} (> {TOLERANCE})")
            else:
                # Weak scaling: the work grows with the ranks; ideal time is constant.
                e["efficiency"] = t0 / t if t > 0 else None
                e["points_per_rank"] = (r["points"] or 0) / r["ranks"]
            entries.append(e)
        summary["studies"].append({"kind": kind, "study": study,
                                   "metric": {"cmc": "sample max seconds",
                                              "nlsq_passes": "fit max seconds per data pass",
                                              "nlsq_fit": "fit max seconds"}[kind],
                                   "runs": entries})
    summary["problems"] = problems
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
    for s in summary["studies"]:
        for e in s["runs"]:
            print(f"{s['kind']:12s} {s['study']:6s} {e['ranks']}x{e['threads']}: "
                  f"{e['seconds']:.4g} s  eff {e.get('efficiency') or 0:.2f}  "
                  f"Δmax {e.get('max_relative_parameter_delta', float('nan')):.2g}")
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
