#!/usr/bin/python3
"""The scaling model (bench/scaling_figures.py, docs/performance.md "Scaling model") with
the network terms measured on the emulated cluster instead of assumed ones, and the traffic
per CMA-ES generation and on the wire. Reads run_network_terms.sh's measurements:

  <work>/cmaes_<mode>_np<n>_g<2|6>/rank_*.json   PMPI counts (mpi_count.c)
  <out>/wire.jsonl                               bytes and packets on the link between nodes
  <out>/latency_net.jsonl                        collective latency against payload
  <scaling dir>/model.json                       the model's measured compute inputs
  <traffic.json>                                 NLSQ collectives per iteration (earlier run)

Writes <out>/network_terms.json, <out>/network_model.md and <out>/network_model.{png,pdf}.

  network_model.py <work> <out> <scaling dir> <traffic.json>"""
import glob
import importlib.util
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

work, out, scaling_dir, traffic_path = sys.argv[1:5]
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "scaling_figures", os.path.join(here, "..", "scaling_figures.py"))
sf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sf)


def ranks(name):
    rows = [json.load(open(p)) for p in glob.glob(os.path.join(work, name, "rank_*.json"))]
    if not rows:
        sys.exit(f"no counts in {work}/{name}")
    return sorted(rows, key=lambda r: r["rank"])


def generations(name):
    p = os.path.join(work, name + ".out", "nlsq", "analysis_results_nlsq.json")
    return json.load(open(p))["global_search"]["generations"]


result = {"cmaes_per_generation": [], "wire": {}, "latency": [], "fits": {}, "model": {}}

# 1. CMA-ES: what each rank hands to MPI per generation.
for n in (2, 4):
    for mode in ("static", "laminar"):
        a, b = ranks(f"cmaes_{mode}_np{n}_g2"), ranks(f"cmaes_{mode}_np{n}_g6")
        ga, gb = generations(f"cmaes_{mode}_np{n}_g2"), generations(f"cmaes_{mode}_np{n}_g6")
        if (ga, gb) != (2, 6):
            sys.exit(f"cmaes {mode} np{n}: ran {ga} and {gb} generations, not 2 and 6")
        per_rank = []
        for ra, rb in zip(a, b):
            ops = {}
            for op, (cb, bb) in rb["calls"].items():
                ca, ba = ra["calls"][op]
                if cb - ca or bb - ba:
                    ops[op] = {"calls": (cb - ca) / 4, "bytes": (bb - ba) / 4}
            per_rank.append({"rank": rb["rank"], "ops": ops,
                             "calls": sum(o["calls"] for o in ops.values()),
                             "bytes": sum(o["bytes"] for o in ops.values())})
        result["cmaes_per_generation"].append({"mode": mode, "ranks": n, "per_rank": per_rank})

# 2. On the wire between two nodes (one rank each).
wire = {r["run"]: r for r in map(json.loads, open(os.path.join(out, "wire.jsonl")))}
for mode in ("static", "laminar"):
    for kind, lo, hi, unit in (("nlsq", "it2", "it6", "iteration"),
                               ("cmaes", "g2", "g6", "generation")):
        x, y = wire[f"{kind}_{mode}_{lo}"], wire[f"{kind}_{mode}_{hi}"]
        result["wire"][f"{kind}_{mode}_per_{unit}"] = {
            "bytes": (y["wire_bytes"] - x["wire_bytes"]) / 4,
            "packets": (y["wire_packets"] - x["wire_packets"]) / 4}
result["wire"]["cmc_static_whole_run"] = {"bytes": wire["cmc_static"]["wire_bytes"],
                                          "packets": wire["cmc_static"]["wire_packets"]}
result["wire"]["idle_10s"] = {"bytes": wire["idle_10s"]["wire_bytes"],
                              "packets": wire["idle_10s"]["wire_packets"]}

# 3. Latency and bandwidth. For 2 ranks, Reduce+Bcast is one step each way:
# t(m) = 2 (α + m/β). α from the smallest payload, β from the slope between 32 KiB and
# 256 KiB; for the minimum (the least disturbed call) and the median.
lat = [json.loads(line) for line in open(os.path.join(out, "latency_net.jsonl")) if line.strip()]
result["latency"] = lat
for setup in sorted({r["setup"] for r in lat}):
    rb = {r["bytes"]: r for r in lat if r["setup"] == setup and r["op"] == "reduce+bcast"}
    f = {}
    for stat in ("min_us", "median_us"):
        t = {m: rb[m][stat] * 1e-6 for m in rb}
        alpha = t[8] / 2
        slope = (t[262144] - t[32768]) / (262144 - 32768)
        f[stat.replace("_us", "")] = {"latency_s": alpha,
                                      "bandwidth_Bps": 2 / slope if slope > 0 else None}
    f["loadavg_1_5_15"] = rb[8]["loadavg_1_5_15"]
    result["fits"][setup] = f

shm = result["fits"]["1 node, srun (shared memory)"]
tcp = result["fits"]["2 nodes, srun (TCP over the bridge)"]
tcp_y = result["fits"]["2 nodes, srun, mpi_yield_when_idle=1 (TCP)"]

# The model's compute inputs (measured on this machine, 2026-11-25) and its assumptions.
m25 = json.load(open(os.path.join(scaling_dir, "model.json")))
rate = m25["measured"]["nlsq_points_per_second_per_core"]
cmc_cost = m25["measured"]["cmc_seconds_per_point_draw"]
small_points = m25["nlsq"]["measured_points"]
a_intra_red = m25["measured"]["intranode_latency_s"]
traffic = json.load(open(traffic_path))
lam = next(r for r in traffic["nlsq_per_iteration"] if r["mode"] == "laminar" and r["ranks"] == 4)
ops0 = lam["per_rank"][0]["ops"]
allreduces = ops0.get("Allreduce", {}).get("calls", 0)
rooted = sum(ops0.get(o, {}).get("calls", 0) for o in ("Bcast", "Gather", "Gatherv", "Reduce"))


def variant(name, a_inter, bw_inter, a_intra, bw_intra, collectives):
    A = dict(sf.ASSUME)
    A["internode_latency_s"], A["internode_bandwidth_Bps"] = a_inter, bw_inter
    return {"name": name, "A": A, "a_intra": a_intra, "bw_intra": bw_intra,
            "collectives": collectives}


def tree_steps(ranks_, nodes):
    inter = math.ceil(math.log2(nodes)) if nodes > 1 else 0
    return inter, (math.ceil(math.log2(ranks_)) if ranks_ > 1 else 0) - inter


def nlsq(v, points, cores_list):
    """scaling_figures.nlsq_model with the intra-node bandwidth given and, when the variant
    says so, the small collectives of an iteration (measured: laminar, per rank) charged to
    every pass: 2 tree latencies per Allreduce, one per rooted call."""
    A = v["A"]
    p = A["nlsq_parameters"]
    nbytes = 8 * (p * p + p + 1)
    t1 = points / rate
    rows = []
    for c in cores_list:
        r = max(1, round(c * A["ranks_per_node"] / A["cores_per_node"]))
        n = max(1, math.ceil(c / A["cores_per_node"]))
        inter, intra = tree_steps(r, n)
        comp = points / (c * rate)
        sync = A["thread_sync_per_pass_s"] if c > 1 else 0.0
        comm = 2 * (inter * (A["internode_latency_s"] + nbytes / A["internode_bandwidth_Bps"]) +
                    intra * (v["a_intra"] + nbytes / v["bw_intra"]))
        if v["collectives"]:
            one_way = inter * A["internode_latency_s"] + intra * v["a_intra"]
            comm += (2 * allreduces + rooted) * one_way
        t = comp + sync + comm
        rows.append({"cores": c, "nodes": n, "ranks": r, "seconds_per_pass": t,
                     "communication_fraction": comm / t, "efficiency": t1 / (c * t)})
    return rows


IB, IB_BW = sf.ASSUME["internode_latency_s"], sf.ASSUME["internode_bandwidth_Bps"]
variants = [
    variant("assumed InfiniBand (the model so far)", IB, IB_BW, a_intra_red, 4 * IB_BW, False),
    variant("assumed InfiniBand + measured collectives per iteration", IB, IB_BW, a_intra_red,
            4 * IB_BW, True),
    variant("emulated TCP, min (yield when idle) + collectives", tcp_y["min"]["latency_s"],
            tcp_y["min"]["bandwidth_Bps"], shm["min"]["latency_s"], shm["min"]["bandwidth_Bps"],
            True),
    variant("emulated TCP, median (busy polling) + collectives", tcp["median"]["latency_s"],
            tcp["median"]["bandwidth_Bps"], shm["median"]["latency_s"],
            shm["median"]["bandwidth_Bps"], True),
]
A0 = sf.ASSUME
cores_list = [2 ** i for i in range(0, int(math.log2(A0["cores_per_node"] * A0["max_nodes"])) + 1)]
shards = int(A0["target_points"] / A0["cmc_points_per_shard"])
for v in variants:
    big = nlsq(v, A0["target_points"], cores_list)
    small = nlsq(v, small_points, cores_list)
    cmc = sf.cmc_model(A0["target_points"], cores_list, cmc_cost, v["a_intra"], v["A"], shards)
    result["model"][v["name"]] = {
        "internode_latency_s": v["A"]["internode_latency_s"],
        "internode_bandwidth_Bps": v["A"]["internode_bandwidth_Bps"],
        "intranode_latency_s": v["a_intra"], "intranode_bandwidth_Bps": v["bw_intra"],
        "collectives_per_pass": (2 * allreduces + rooted) if v["collectives"] else 0,
        "nlsq_target": big, "nlsq_measured_size": small, "cmc_target": cmc,
        "nlsq_below_90_at_cores": {"target": sf.first_below(big),
                                   "measured_size": sf.first_below(small)},
        "cmc_below_90_at_cores": sf.first_below(cmc)}
result["inputs"] = {"nlsq_points_per_second_per_core": rate,
                    "cmc_seconds_per_point_draw": cmc_cost, "measured_points": small_points,
                    "nlsq_calls_per_iteration_laminar": {"Allreduce": allreduces,
                                                         "rooted": rooted},
                    "scaling_inputs": os.path.join(scaling_dir, "model.json")}
json.dump(result, open(os.path.join(out, "network_terms.json"), "w"), indent=1)

# Figure: efficiency against cores for each variant.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
styles = ["k-", "C0-", "C1-", "C3-"]
for v, st in zip(variants, styles):
    m = result["model"][v["name"]]
    c = [r["cores"] for r in m["nlsq_target"]]
    axes[0].semilogx(c, [r["efficiency"] for r in m["nlsq_target"]], st, lw=1.4,
                     label=v["name"])
    axes[0].semilogx(c, [r["efficiency"] for r in m["nlsq_measured_size"]], st[:-1] + "--",
                     lw=1.0)
    axes[1].semilogx(c, [r["efficiency"] for r in m["cmc_target"]], st, lw=1.4)
for ax, title in zip(axes, (f"NLSQ per data pass: 1e10 points (solid), "
                            f"{small_points / 1e6:.2f} M (dashed)", f"CMC, 1e10 points in {shards} shards")):
    ax.axhline(0.9, color="grey", lw=0.6, ls=":")
    for nodes in (1, 8, 64):
        ax.axvline(nodes * A0["cores_per_node"], color="grey", lw=0.4, ls="-.")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(f"cores ({A0['cores_per_node']} per node; lines at 1, 8, 64 nodes)")
    ax.set_title(title)
axes[0].set_ylabel("modelled strong-scaling efficiency")
fig.legend(fontsize=7, loc="lower center", ncol=2, bbox_to_anchor=(0.5, -0.13))
fig.suptitle("Scaling model: assumed InfiniBand against the network terms measured on the "
             "emulated cluster (2 cores)", fontsize=9)
for ext in ("png", "pdf"):
    fig.savefig(os.path.join(out, f"network_model.{ext}"), dpi=130, bbox_inches="tight")

# Table.
L = ["# Network terms measured on the emulated cluster, and the scaling model with them", "",
     "## What each rank hands to MPI per CMA-ES generation",
     "(runs stopped after 6 and after 2 generations, difference / 4; one run, no restarts)", "",
     "| mode | ranks | rank | calls | bytes | by operation (calls/bytes per generation) |",
     "|---|---|---|---|---|---|"]
for row in result["cmaes_per_generation"]:
    for r in row["per_rank"]:
        ops = ", ".join(f"{o} {v['calls']:g}×/{v['bytes']:g} B" for o, v in sorted(r["ops"].items()))
        L.append(f"| {row['mode']} | {row['ranks']} | {r['rank']} | {r['calls']:g} | "
                 f"{r['bytes']:g} | {ops} |")
L += ["", "## On the wire between two nodes (one rank each; both links, both directions)", "",
      "| what | bytes | packets |", "|---|---|---|"]
for k, v in result["wire"].items():
    L.append(f"| {k} | {v['bytes']:g} | {v['packets']:g} |")
L += ["", "## Latency and bandwidth from Reduce+Bcast between 2 ranks "
      "(t = 2(α + m/β); α from 8 B, β from 32 KiB → 256 KiB)", "",
      "| setup | α min | β min | α median | β median | load |", "|---|---|---|---|---|---|"]
for s, f in result["fits"].items():
    def bw(x):
        return f"{x / 1e9:.2f} GB/s" if x else "n/a"
    L.append(f"| {s} | {f['min']['latency_s'] * 1e6:.1f} µs | {bw(f['min']['bandwidth_Bps'])} | "
             f"{f['median']['latency_s'] * 1e6:.1f} µs | {bw(f['median']['bandwidth_Bps'])} | "
             f"{f['loadavg_1_5_15']} |")
L += ["", "## The model with each set of terms", "",
      "| variant | α inter | β inter | NLSQ 1e10 at 64 nodes | NLSQ 1.99 M at 8 nodes | "
      "NLSQ 1e10 < 90 % from | 1.99 M < 90 % from | CMC 1e10 at 64 nodes |",
      "|---|---|---|---|---|---|---|---|"]
for name, m in result["model"].items():
    def at(rows, c):
        return next(r for r in rows if r["cores"] == c)["efficiency"]
    below = m["nlsq_below_90_at_cores"]
    L.append(f"| {name} | {m['internode_latency_s'] * 1e6:.1f} µs | "
             f"{m['internode_bandwidth_Bps'] / 1e9:.2f} GB/s | "
             f"{100 * at(m['nlsq_target'], 4096):.1f} % | "
             f"{100 * at(m['nlsq_measured_size'], 512):.1f} % | "
             f"{below['target'] or 'never'} cores | {below['measured_size'] or 'never'} cores | "
             f"{100 * at(m['cmc_target'], 4096):.1f} % |")
open(os.path.join(out, "network_model.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
