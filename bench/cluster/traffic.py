#!/usr/bin/env python3
"""Aggregates run_cluster_bench.sh's measurements: per-rank MPI traffic per NLSQ iteration
and per CMC run (from mpi_count.c's rank_*.json), the collective latencies (latency.jsonl).
Writes traffic.json and summary.md to the output directory.

usage: traffic.py <traffic dir> <latency.jsonl> <out dir>
"""
import glob
import json
import os
import sys

tdir, lat_path, out = sys.argv[1:4]


def ranks(name):
    rows = []
    for p in sorted(glob.glob(os.path.join(tdir, name, "rank_*.json"))):
        rows.append(json.load(open(p)))
    if not rows:
        sys.exit(f"no counts in {tdir}/{name}")
    return sorted(rows, key=lambda r: r["rank"])


def iterations(name):
    p = os.path.join(tdir, name + ".out", "nlsq", "analysis_results_nlsq.json")
    return json.load(open(p))["optimization_summary"]["iterations"]


result = {"nlsq_per_iteration": [], "cmc_per_run": [], "latency": []}
for n in (2, 4):
    for mode in ("static", "laminar"):
        a, b = ranks(f"nlsq_{mode}_np{n}_it2"), ranks(f"nlsq_{mode}_np{n}_it6")
        ia, ib = iterations(f"nlsq_{mode}_np{n}_it2"), iterations(f"nlsq_{mode}_np{n}_it6")
        if ib == ia:
            sys.exit(f"{mode} np{n}: both runs stopped at {ia} iterations")
        per_rank = []
        for ra, rb in zip(a, b):
            ops = {}
            for op, (cb, bb) in rb["calls"].items():
                ca, ba = ra["calls"][op]
                if cb - ca or bb - ba:
                    ops[op] = {"calls": (cb - ca) / (ib - ia), "bytes": (bb - ba) / (ib - ia)}
            per_rank.append({"rank": rb["rank"], "ops": ops,
                             "calls": sum(o["calls"] for o in ops.values()),
                             "bytes": sum(o["bytes"] for o in ops.values())})
        result["nlsq_per_iteration"].append(
            {"mode": mode, "ranks": n, "iterations": [ia, ib], "per_rank": per_rank})
    c = ranks(f"cmc_static_np{n}")
    result["cmc_per_run"].append({"mode": "static", "ranks": n, "shards": 4, "chains": 2,
                                  "draws": 100, "warmup": 50, "per_rank": [
        {"rank": r["rank"],
         "ops": {op: {"calls": v[0], "bytes": v[1]} for op, v in r["calls"].items() if v[0]},
         "calls": sum(v[0] for v in r["calls"].values()),
         "bytes": sum(v[1] for v in r["calls"].values())} for r in c]})
result["latency"] = [json.loads(line) for line in open(lat_path) if line.strip()]
json.dump(result, open(os.path.join(out, "traffic.json"), "w"), indent=1)


def fmt_ops(ops):
    return ", ".join(f"{op} {v['calls']:g}×/{v['bytes']:g} B" for op, v in sorted(ops.items()))


lines = ["# MPI traffic and collective latency on the emulated cluster", "",
         "## What each rank hands to MPI per NLSQ iteration",
         "(runs stopped after 6 and after 2 iterations, difference / 4; payload bytes as "
         "passed to the calls, receives not counted)", "",
         "| mode | ranks | rank | calls | bytes | by operation (calls/bytes per iteration) |",
         "|---|---|---|---|---|---|"]
for row in result["nlsq_per_iteration"]:
    for r in row["per_rank"]:
        lines.append(f"| {row['mode']} | {row['ranks']} | {r['rank']} | {r['calls']:g} | "
                     f"{r['bytes']:g} | {fmt_ops(r['ops'])} |")
lines += ["", "## What each rank hands to MPI in a whole CMC run",
          "(static, 4 shards × 2 chains × (50 warm-up + 100 draws), no NLSQ warm start; "
          "includes loading and output)", "",
          "| ranks | rank | calls | bytes | by operation |", "|---|---|---|---|---|"]
for row in result["cmc_per_run"]:
    for r in row["per_rank"]:
        lines.append(f"| {row['ranks']} | {r['rank']} | {r['calls']} | {r['bytes']} | "
                     f"{fmt_ops(r['ops'])} |")
lines += ["", "## Collective latency between 2 ranks (µs, median of the reps; min; p90)", "",
          "| setup | operation | bytes | median | min | p90 | load avg |",
          "|---|---|---|---|---|---|---|"]
for r in result["latency"]:
    lines.append(f"| {r['setup']} | {r['op']} | {r['bytes']} | {r['median_us']:.1f} | "
                 f"{r['min_us']:.1f} | {r['p90_us']:.1f} | {r['loadavg_1_5_15']} |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
