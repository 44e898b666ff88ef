#!/usr/bin/python3
"""Figures and the performance model for a scaling study directory OUT (written by
bench/run_scaling.sh or jobscripts/nlsq_strong_scaling.sbatch):

  OUT/figures/speedup.{png,pdf}     strong-scaling speedup vs cores, per study kind
  OUT/figures/efficiency.{png,pdf}  strong and weak efficiency vs cores
  OUT/figures/breakdown.{png,pdf}   time per phase (slowest rank) of every run
  OUT/figures/memory.{png,pdf}      peak RSS per rank of every run
  OUT/figures/model.{png,pdf}       modelled NLSQ/CMC strong-scaling efficiency to 64 nodes
                                    (1e10 points, and the measured problem size) with the
                                    measured points on the same axes
  OUT/model.json                    the model's inputs, assumptions and results
  OUT/figures/summary.json          what each figure shows, with its numbers

The model (docs/performance.md, "Scaling model") uses the per-point costs measured by the
1-rank, 1-thread runs of OUT and the Reduce+Bcast latency measured by bench_reduction
(OUT/reduction.json); the inter-node network is an assumed InfiniBand HDR fabric.

  /usr/bin/python3 bench/scaling_figures.py OUT [docs/bench/nlsq_fit_<date>_summary.json]"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# Assumptions of the model (stated in model.json and docs/performance.md).
ASSUME = {
    "cores_per_node": 64,            # 2 sockets × 32 cores
    "ranks_per_node": 2,             # one rank per NUMA domain (socket)
    "internode_latency_s": 2.0e-6,   # MPI small-message latency, InfiniBand HDR
    "internode_bandwidth_Bps": 12.0e9,  # per link, HDR100-class
    "intranode_latency_s": 0.5e-6,   # used when OUT/reduction.json is missing
    "thread_sync_per_pass_s": 5.0e-6,  # fork/join + tile-sum of the compute threads per pass
    "nlsq_parameters": 53,           # laminar_flow, 23 angles, individual per-angle mode
    "nlsq_passes": 35,               # data passes of a full fit (docs/bench/nlsq_fit_*)
    "cmc_points_per_shard": 1.0e7,   # shard size for the 1e10-point case
    "cmc_chains": 4, "cmc_draws_per_chain": 1500,  # warmup + samples
    "cmc_sampled_parameters": 53,
    "target_points": 1.0e10,
    "max_nodes": 64,
}


def save(fig, out, name):
    d = os.path.join(out, "figures")
    os.makedirs(d, exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(d, f"{name}.{ext}"), dpi=130, bbox_inches="tight")
    plt.close(fig)


def load(out):
    summary = json.load(open(os.path.join(out, "summary.json")))
    runs = {}
    d = os.path.join(out, "runs")
    for f in sorted(os.listdir(d)):
        r = json.load(open(os.path.join(d, f)))
        runs[(r["kind"], r["study"], r["ranks"], r["threads"])] = r
    red = None
    p = os.path.join(out, "reduction.json")
    if os.path.exists(p):
        red = json.load(open(p))
    return summary, runs, red


def reduction_latency(red):
    """Measured Reduce+Bcast time for p parameters at 2 ranks on this machine:
    {p: seconds}. One tree level each way, so α_intra ≈ t(9)/2."""
    if not red:
        return {}
    out = {}
    for b in red["benchmarks"]:
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        out[int(b["parameters"])] = b["real_time"] * unit
    return out


def tree_allreduce(P_ranks, P_nodes, nbytes, a_intra, a_inter, bw):
    """Reduce to rank 0 + Bcast over a binomial tree: 2 ⌈log2 P⌉ steps; the steps that
    cross nodes (⌈log2 nodes⌉ of them) pay the network, the others shared memory."""
    if P_ranks <= 1:
        return 0.0
    inter = math.ceil(math.log2(P_nodes)) if P_nodes > 1 else 0
    intra = math.ceil(math.log2(P_ranks)) - inter
    return 2 * (inter * (a_inter + nbytes / bw) + intra * (a_intra + nbytes / (4 * bw)))


def nlsq_model(points, cores_list, rate_per_core, a_intra, A):
    """Per data pass: points/(cores·rate) + thread sync + reduction of JᵀJ, Jᵀr, χ²."""
    p = A["nlsq_parameters"]
    nbytes = 8 * (p * p + p + 1)
    rows = []
    t1 = points / rate_per_core
    for c in cores_list:
        ranks = max(1, round(c * A["ranks_per_node"] / A["cores_per_node"]))
        nodes = max(1, math.ceil(c / A["cores_per_node"]))
        comp = points / (c * rate_per_core)
        sync = A["thread_sync_per_pass_s"] if c > 1 else 0.0
        comm = tree_allreduce(ranks, nodes, nbytes, a_intra, A["internode_latency_s"],
                              A["internode_bandwidth_Bps"])
        t = comp + sync + comm
        rows.append({"cores": c, "nodes": nodes, "ranks": ranks, "seconds_per_pass": t,
                     "communication_fraction": comm / t, "efficiency": t1 / (c * t)})
    return rows


def cmc_model(points, cores_list, cost_per_point_draw, a_intra, A, shards):
    """Shards are independent: a rank samples ⌈S/ranks⌉ shards with its cores; at the end
    the draws of every shard go to rank 0 (gather) and are combined there."""
    k = A["cmc_sampled_parameters"]
    draws = A["cmc_chains"] * A["cmc_draws_per_chain"]
    per_shard = points / shards * draws * cost_per_point_draw
    t1 = shards * per_shard
    rows = []
    for c in cores_list:
        ranks = max(1, round(c * A["ranks_per_node"] / A["cores_per_node"]))
        nodes = max(1, math.ceil(c / A["cores_per_node"]))
        cores_per_rank = c / ranks
        comp = math.ceil(shards / ranks) * per_shard / cores_per_rank
        gather_bytes = 8.0 * shards * draws * k
        comm = 0.0
        if ranks > 1:
            lat = A["internode_latency_s"] if nodes > 1 else a_intra
            comm = math.ceil(math.log2(ranks)) * lat + gather_bytes / A["internode_bandwidth_Bps"]
        combine = 1e-9 * shards * draws * k * k  # consensus weights (k² per draw), 1 GFLOP/s
        t = comp + comm + combine
        rows.append({"cores": c, "nodes": nodes, "ranks": ranks, "seconds": t,
                     "communication_fraction": (comm + combine) / t, "efficiency": t1 / (c * t)})
    return rows


def first_below(rows, level=0.9):
    for r in rows:
        if r["efficiency"] < level:
            return r["cores"]
    return None


def main():
    out = sys.argv[1]
    summary, runs, red = load(out)
    figs = {}
    studies = {(s["kind"], s["study"]): s for s in summary["studies"]}
    colors = {"nlsq_passes": "C0", "nlsq_fit": "C1", "cmc": "C2"}

    # Speedup (strong).
    fig, ax = plt.subplots(figsize=(5.5, 4))
    maxc = 1
    for (kind, study), s in studies.items():
        if study != "strong":
            continue
        c = [e["cores"] for e in s["runs"]]
        maxc = max(maxc, max(c))
        ax.plot(c, [e["speedup"] for e in s["runs"]], "o-", color=colors.get(kind), label=kind)
        for e in s["runs"]:
            ax.annotate(f"{e['ranks']}×{e['threads']}", (e["cores"], e["speedup"]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.plot([1, maxc], [1, maxc], "k--", lw=0.8, label="ideal")
    ax.set_xlabel("cores (ranks × threads)")
    ax.set_ylabel("speedup vs 1 rank × 1 thread")
    ax.set_title("strong scaling")
    ax.legend(fontsize=8)
    save(fig, out, "speedup")
    figs["speedup"] = {k: [(e["ranks"], e["threads"], e["speedup"]) for e in s["runs"]]
                       for (k, st), s in studies.items() if st == "strong"}

    # Efficiency (strong and weak).
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for (kind, study), s in studies.items():
        ax.plot([e["cores"] for e in s["runs"]], [e["efficiency"] for e in s["runs"]],
                "o-" if study == "strong" else "s--", color=colors.get(kind),
                label=f"{kind} ({study})")
    ax.axhline(0.9, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("cores (ranks × threads)")
    ax.set_ylabel("parallel efficiency")
    ax.set_ylim(0, 1.2)
    ax.legend(fontsize=7)
    save(fig, out, "efficiency")
    figs["efficiency"] = {f"{k}/{st}": [(e["ranks"], e["threads"], e["efficiency"])
                                        for e in s["runs"]] for (k, st), s in studies.items()}

    # Time breakdown: slowest-rank time per phase, one bar per run.
    phases = ["load", "partition", "fit", "sample", "write"]
    labels, stacks = [], {p: [] for p in phases}
    for key in sorted(runs):
        r = runs[key]
        labels.append(f"{r['kind']}\n{r['study']} {r['ranks']}×{r['threads']}")
        for p in phases:
            stacks[p].append(r["phases"].get(p, {}).get("max", 0.0))
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(labels)), 4))
    bottom = np.zeros(len(labels))
    for p in phases:
        ax.bar(range(len(labels)), stacks[p], bottom=bottom, label=p)
        bottom += np.array(stacks[p])
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("seconds (slowest rank)")
    ax.set_title("time per phase")
    ax.legend(fontsize=7)
    save(fig, out, "breakdown")
    figs["breakdown"] = {l.replace("\n", " "): {p: stacks[p][i] for p in phases}
                         for i, l in enumerate(labels)}

    # Memory: peak RSS per rank.
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(labels)), 4))
    mem = {}
    for i, key in enumerate(sorted(runs)):
        r = runs[key]
        rss = [k / 1024 for k in r["peak_rss_kib_per_rank"]]
        ax.scatter([i] * len(rss), rss, color=colors.get(r["kind"]), s=14)
        mem[labels[i].replace("\n", " ")] = rss
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("peak RSS per rank (MiB)")
    ax.set_title("memory")
    save(fig, out, "memory")
    figs["memory"] = mem

    # Model.
    A = dict(ASSUME)
    lat = reduction_latency(red)
    a_intra = lat[9] / 2 if 9 in lat else A["intranode_latency_s"]
    base_fit = runs.get(("nlsq_fit", "strong", 1, 1))
    base_cmc = runs.get(("cmc", "strong", 1, 1))
    model = {"assumptions": A, "measured": {"reduce_bcast_seconds_2ranks": lat,
                                            "intranode_latency_s": a_intra}}
    cores_list = [2 ** i for i in range(0, int(math.log2(A["cores_per_node"] * A["max_nodes"])) + 1)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    if base_fit:
        rate = base_fit["points"] * base_fit["data_passes"] / base_fit["phases"]["fit"]["max"]
        model["measured"]["nlsq_points_per_second_per_core_this_run"] = rate
        # The per-point cost of a full fit measured on a quiet machine (docs/bench), when
        # given, is the better base: this run's may be slowed down by other jobs.
        if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
            fit = json.load(open(sys.argv[2]))
            one = next(r for r in fit["runs"] if int(r["ranks"]) == 1)
            rate = one["points"] * one["passes"] / one["fit_seconds"]
            model["measured"]["nlsq_rate_source"] = sys.argv[2]
        model["measured"]["nlsq_points_per_second_per_core"] = rate
        big = nlsq_model(A["target_points"], cores_list, rate, a_intra, A)
        small = nlsq_model(base_fit["points"], cores_list, rate, a_intra, A)
        model["nlsq"] = {"target": big, "measured_size": small,
                         "measured_points": base_fit["points"],
                         "efficiency_below_90_at_cores": {
                             "target": first_below(big), "measured_size": first_below(small)}}
        # Where 64 nodes drop below 90 %: the smallest problem that keeps 90 %.
        n = A["target_points"]
        while n > 1e4 and nlsq_model(n, [cores_list[-1]], rate, a_intra, A)[0]["efficiency"] >= 0.9:
            n /= 1.25
        model["nlsq"]["min_points_for_90pct_at_64_nodes"] = n * 1.25
        ax = axes[0]
        ax.semilogx([r["cores"] for r in big], [r["efficiency"] for r in big], "-",
                    label=f"model, {A['target_points']:.0e} points")
        ax.semilogx([r["cores"] for r in small], [r["efficiency"] for r in small], "--",
                    label=f"model, {base_fit['points'] / 1e6:.1f} M points (measured size)")
        s = studies.get(("nlsq_fit", "strong"))
        if s:
            ax.semilogx([e["cores"] for e in s["runs"]], [e["efficiency"] for e in s["runs"]],
                        "ko", label="measured here (2 cores, shared)")
        ax.axhline(0.9, color="grey", lw=0.6, ls=":")
        ax.set_title("NLSQ fit: strong-scaling efficiency")
        ax.set_xlabel(f"cores ({A['cores_per_node']} per node, up to {A['max_nodes']} nodes)")
        ax.set_ylabel("efficiency")
        ax.set_ylim(0, 1.15)
        ax.legend(fontsize=7)
    if base_cmc and base_cmc.get("points"):
        draws_measured = 2 * (2 * 150)  # chains × (warmup + samples) of run_scaling.sh
        try:
            cl = base_cmc["command_line"].split()
            ch = int(cl[cl.index("--n-chains") + 1])
            wu = int(cl[cl.index("--n-warmup") + 1])
            sa = int(cl[cl.index("--n-samples") + 1])
            draws_measured = ch * (wu + sa)
        except (ValueError, IndexError, AttributeError):
            pass
        cost = base_cmc["phases"]["sample"]["max"] / (base_cmc["points"] * draws_measured)
        model["measured"]["cmc_seconds_per_point_draw"] = cost
        shards = max(1, int(A["target_points"] / A["cmc_points_per_shard"]))
        big = cmc_model(A["target_points"], cores_list, cost, a_intra, A, shards)
        small = cmc_model(base_cmc["points"], cores_list, cost, a_intra, A, 2)
        model["cmc"] = {"target": big, "measured_size_2_shards": small, "shards_target": shards,
                        "efficiency_below_90_at_cores": {"target": first_below(big),
                                                         "measured_size_2_shards": first_below(small)}}
        ax = axes[1]
        ax.semilogx([r["cores"] for r in big], [r["efficiency"] for r in big], "-",
                    label=f"model, {A['target_points']:.0e} points, {shards} shards")
        ax.semilogx([r["cores"] for r in small], [r["efficiency"] for r in small], "--",
                    label="model, measured size, 2 shards")
        s = studies.get(("cmc", "strong"))
        if s:
            ax.semilogx([e["cores"] for e in s["runs"]], [e["efficiency"] for e in s["runs"]],
                        "ko", label="measured here (2 cores, shared)")
        ax.axhline(0.9, color="grey", lw=0.6, ls=":")
        ax.set_title("CMC: strong-scaling efficiency")
        ax.set_xlabel("cores")
        ax.set_ylim(0, 1.15)
        ax.legend(fontsize=7)
    save(fig, out, "model")
    json.dump(model, open(os.path.join(out, "model.json"), "w"), indent=1)
    figs["model"] = {k: model[k]["efficiency_below_90_at_cores"] for k in ("nlsq", "cmc")
                     if k in model}
    json.dump(figs, open(os.path.join(out, "figures", "summary.json"), "w"), indent=1)
    print(f"figures in {out}/figures")


if __name__ == "__main__":
    main()
