#!/usr/bin/python3
"""Runs the side-by-side benchmark of bench/whole_job/run_ceres_bench.sh (see its header):
homodyne-hpc (default pipeline and local fit alone, 2 ranks) against the Ceres peer
(bench/peers/ceres, 2 threads) on the whole-job benchmark's laminar_flow data, from the
truth, alternating within each round. Writes OUT.json (every run, medians, ratios, χ²
agreement, fixed costs) and OUT.md. The JSON is rewritten after every run, so an
interrupted benchmark keeps what it measured. Exit status 1 when a run failed.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whole_job_run as w  # noqa: E402  (the whole-job benchmark's data, configs, runner)

# Issue 43's bar for the whole job, default pipeline: Ceres whole / ours whole.
TARGET_RATIO = {200: 1.0, 500: 2.0, 1000: 3.0}
FIXED_COST_BAR_S = 0.2
# Same objective, same data, same start: the answers must agree to this (relative χ²).
CHI2_AGREEMENT = 1e-9
TOOLS = [("ceres", None), ("homodyne-hpc", "default"), ("homodyne-hpc", "local"),
         ("homodyne-hpc", "default_no_fitted_data")]
KINDS = [kind for tool, kind in TOOLS if tool == "homodyne-hpc"]


def log(msg):
    print(msg, flush=True)


def dd_rate(path, sync):
    """GB/s of writing 1 GiB of zeros to `path` with dd (into the page cache, or with
    fdatasync); the file is removed."""
    cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=8M", "count=128"]
    if sync:
        cmd.append("conv=fdatasync")
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    os.remove(path)
    return (1 << 30) / dt / 1e9


def warm_memory(gib):
    """Touches `gib` GiB of memory once (a tmpfs file, then removed) and returns the seconds.

    On a virtual machine whose memory the host backs lazily, the first touch of a guest page
    is slow: there, writing 1 GiB of new files into the page cache ran at ~0.2 GB/s before
    and ~2 GB/s after (docs/performance.md). A job that writes its result files into pages
    not touched since boot then measures the host, not the job."""
    path = "/dev/shm/homodyne_bench_warm"
    t = time.perf_counter()
    with open(path, "wb") as f:
        block = bytes(64 << 20)
        for _ in range(gib * 16):
            f.write(block)
    os.remove(path)
    return time.perf_counter() - t


def median(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def run_ceres(a, ds, rep):
    run_dir = os.path.join(a.data_dir, "runs", ds["name"])
    os.makedirs(run_dir, exist_ok=True)
    rss_file = os.path.join(run_dir, "ceres.kib")
    out_file = os.path.join(run_dir, "ceres.json")
    log_file = os.path.join(run_dir, "ceres.log")
    if os.path.exists(rss_file):
        os.remove(rss_file)
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss_file, a.peer, ds["configs"]["default"],
           "--x0", "truth", "--threads", str(a.cores), "--label", ds["name"]]
    load = os.getloadavg()[0]
    code, wall = w.run_timed(cmd, a.timeout, out_file, log_file)
    r = {"repeat": rep, "wall_s": wall, "exit_code": code, "threads": a.cores,
         "load_1min_before": load}
    with open(out_file) as f:
        lines = [ln for ln in f if ln.lstrip().startswith("{")]
    d = json.loads(lines[-1]) if lines else {}
    for k in ("wall_fit_s", "wall_load_s", "wall_data_s", "wall_setup_s", "wall_post_s",
              "wall_process_s", "iterations", "nfev", "njev", "termination", "message",
              "chi2", "params", "contrast", "offset", "at_bounds", "state_mismatch",
              "peak_rss_mib"):
        if k in d:
            r[k] = d[k]
    r["fit_s"] = d.get("wall_fit_s")
    try:
        with open(rss_file) as f:
            text = f.read().split()
        if text and text[-1].isdigit():
            r["peak_rss_mib"] = int(text[-1]) / 1024.0
    except OSError:
        pass
    ok = code == 0 and r.get("chi2") is not None and d.get("state_mismatch", 0) == 0
    r["status"] = "ok" if ok else ("timeout" if code is None else "failed")
    if not ok:
        r["log_tail"] = w.tail(log_file)
    return r


def run_ours(a, ds, kind, rep):
    load = os.getloadavg()[0]
    r = w.run_hpc(a, ds, kind, a.ranks, rep, a.cores)
    r["load_1min_before"] = load
    report = os.path.join(a.data_dir, "runs", ds["name"], f"hpc_{kind}_np{a.ranks}",
                          "run_report.yaml")
    if os.path.exists(report):
        with open(report) as f:
            fc = (yaml.safe_load(f) or {}).get("fixed_costs") or {}
        r["fixed_costs"] = fc.get("seconds_max_over_ranks") or {}
        r["fixed_costs_total_s"] = fc.get("total_seconds")
    return r


def summarise(a, doc, ds, rows):
    """Medians per tool, the ratios and the χ² agreement of one size."""
    s = {"dataset": ds["name"], "frames": ds["frames"], "tools": {}}
    for key, row in rows.items():
        ok = [r for r in row["runs"] if r["status"] == "ok"]
        m = {k: median([r.get(k) for r in ok]) for k in ("wall_s", "fit_s", "chi2",
                                                         "peak_rss_mib")}
        m["n_ok"], m["n_runs"] = len(ok), len(row["runs"])
        for k in ("wall_s", "fit_s"):
            v = [r[k] for r in ok if r.get(k) is not None]
            m[k + "_range"] = [min(v), max(v)] if v else None
        m["iterations"] = median([r.get("iterations") for r in ok])
        if key[0] == "homodyne-hpc":
            # The default result files (fitted_data.h5 and .npz), which Ceres does not
            # write: the whole time without them, derived from the run's own items.
            m["wall_s_without_fitted_data_writes"] = median(
                [r["wall_s"] - sum(r.get("fixed_costs", {}).get(n) or 0.0
                                   for n in ("write_fitted_data", "write_fitted_data_npz"))
                 for r in ok])
        m["load_1min_before_runs"] = [r.get("load_1min_before") for r in row["runs"]]
        chi2s = sorted({r["chi2"] for r in ok})
        m["chi2_distinct_values"] = len(chi2s)
        if key[0] == "homodyne-hpc" and ok:
            m["fixed_costs_total_s"] = median([r.get("fixed_costs_total_s") for r in ok])
            names = []
            for r in ok:
                names += [n for n in r.get("fixed_costs", {}) if n not in names]
            m["fixed_costs"] = {n: median([r.get("fixed_costs", {}).get(n) for r in ok])
                                for n in names}
        s["tools"]["/".join(x for x in key if x)] = m
    c = s["tools"].get("ceres", {})
    for kind in KINDS:
        o = s["tools"].get(f"homodyne-hpc/{kind}", {})
        if c.get("wall_s") and o.get("wall_s"):
            s[f"ratio_whole_{kind}"] = c["wall_s"] / o["wall_s"]
        if c.get("wall_s") and o.get("wall_s_without_fitted_data_writes"):
            s[f"ratio_whole_{kind}_without_fitted_data_writes"] = (
                c["wall_s"] / o["wall_s_without_fitted_data_writes"])
        if c.get("fit_s") and o.get("fit_s"):
            s[f"ratio_fit_{kind}"] = c["fit_s"] / o["fit_s"]
        if c.get("chi2") and o.get("chi2"):
            rel = abs(o["chi2"] - c["chi2"]) / abs(c["chi2"])
            s[f"chi2_rel_diff_{kind}_vs_ceres"] = rel
            s[f"chi2_agrees_{kind}"] = rel <= CHI2_AGREEMENT
    target = TARGET_RATIO.get(ds["frames"])
    if target is not None and "ratio_whole_default" in s:
        s["target_ratio_whole_default"] = target
        s["target_met"] = s["ratio_whole_default"] >= target
    fc = s["tools"].get("homodyne-hpc/default", {}).get("fixed_costs_total_s")
    if fc is not None:
        s["fixed_costs_bar_s"] = FIXED_COST_BAR_S
        s["fixed_costs_bar_met"] = fc <= FIXED_COST_BAR_S
    return s


def fmt(x, spec=".2f"):
    return "–" if x is None else format(x, spec)


def span(m, key):
    """median (min–max) of a tool's successful runs."""
    r = m.get(key + "_range")
    rng = f" ({r[0]:.2f}–{r[1]:.2f})" if r else ""
    return f"{fmt(m.get(key))} s{rng}"


def write_md(doc, path):
    m = doc["machine"]
    out = [f"# Against a direct Ceres fit ({doc['date_utc']})", "",
           f"`{doc['command']}`", "",
           f"Machine: {m['cpu_model']}, {m['nproc']} cores; git {m['git_commit']}"
           f"{' (dirty)' if m['git_dirty'] else ''}. **Load average (1, 5, 15 min) at the "
           f"start {', '.join(f'{x:.1f}' for x in m['load_average_start'])}, at the end "
           f"{', '.join(f'{x:.1f}' for x in m.get('load_average_end', []))}** (other jobs "
           "shared the 2 cores: every time is inflated and noisy).", "",
           "Writing 1 GiB with dd into the data directory (GB/s, page cache / fdatasync): " +
           "; ".join(f"{k.replace('_', ' ')} {v['page_cache_gb_s']:.2f} / "
                     f"{v['fdatasync_gb_s']:.2f}"
                     for k, v in m.get("write_rates", {}).items() if "page_cache_gb_s" in v) +
           (f" (warm-up: {m['write_rates']['warm_up']['gib']} GiB touched once, "
            f"{m['write_rates']['warm_up']['seconds']:.0f} s)"
            if "warm_up" in m.get("write_rates", {}) else "") + ".", "",
           f"laminar_flow, 23 angles, truth start, {doc['settings']['repeats']} round(s), the "
           "tools alternating within each round; medians of the successful runs. "
           "Whole = the whole process from outside; fit = each tool's own report (Ceres "
           "`wall_fit_s`; homodyne-hpc `timing_seconds.fit`, slowest rank).", "",
           "| data | Ceres whole (fit) | ours default whole (fit) | ours local whole (fit) | "
           "Ceres/ours whole, default | target | Ceres/ours whole, local | "
           "Ceres/ours fit, default / local | χ² Ceres | χ² rel. diff default / local |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    nofiles = ["", "The default pipeline writing no fitted-data files (`output.fitted_data: "
               "none`: parameters and reports only, the kind of files the Ceres peer writes), "
               "measured in the same rounds:", "",
               "| data | Ceres whole | ours default, no fitted-data files, whole (fit) | "
               "Ceres/ours whole | bar of the default | χ² rel. diff |", "|---|---|---|---|---|---|"]
    for s in doc["summary"]:
        t = s["tools"]
        c, d, loc = (t.get("ceres", {}), t.get("homodyne-hpc/default", {}),
                     t.get("homodyne-hpc/local", {}))
        met = s.get("target_met")
        out.append(
            f"| 23 × {s['frames']} | {fmt(c.get('wall_s'))} s ({fmt(c.get('fit_s'))}) | "
            f"{fmt(d.get('wall_s'))} s ({fmt(d.get('fit_s'))}) | "
            f"{fmt(loc.get('wall_s'))} s ({fmt(loc.get('fit_s'))}) | "
            f"{fmt(s.get('ratio_whole_default'))}× | "
            f"≥ {fmt(s.get('target_ratio_whole_default'), 'g')}× "
            f"{'met' if met else 'NOT met' if met is not None else ''} | "
            f"{fmt(s.get('ratio_whole_local'))}× | {fmt(s.get('ratio_fit_default'))}× / "
            f"{fmt(s.get('ratio_fit_local'))}× | {fmt(c.get('chi2'), '.12g')} | "
            f"{fmt(s.get('chi2_rel_diff_default_vs_ceres'), '.1e')} / "
            f"{fmt(s.get('chi2_rel_diff_local_vs_ceres'), '.1e')} |")
        n = t.get("homodyne-hpc/default_no_fitted_data", {})
        r = s.get("ratio_whole_default_no_fitted_data")
        bar = s.get("target_ratio_whole_default")
        verdict = "" if r is None or bar is None else ("met" if r >= bar else "NOT met")
        nofiles.append(
            f"| 23 × {s['frames']} | {fmt(c.get('wall_s'))} s | {fmt(n.get('wall_s'))} s "
            f"({fmt(n.get('fit_s'))}) | {fmt(r)}× | ≥ {fmt(bar, 'g')}× {verdict} | "
            f"{fmt(s.get('chi2_rel_diff_default_no_fitted_data_vs_ceres'), '.1e')} |")
    out += nofiles
    out += ["", "Every tool, median (min–max) over the rounds (distinct χ²: how many "
            "different χ² bits the rounds gave):", "",
            "| data | tool | whole job | fit | iterations | peak RSS (MiB) | χ² | "
            "distinct χ² |",
            "|---|---|---|---|---|---|---|---|"]
    for s in doc["summary"]:
        for name, m in s["tools"].items():
            out.append(f"| 23 × {s['frames']} | {name} | {span(m, 'wall_s')} | "
                       f"{span(m, 'fit_s')} | {fmt(m.get('iterations'), 'g')} | "
                       f"{fmt(m.get('peak_rss_mib'), '.0f')} | {fmt(m.get('chi2'), '.13g')} | "
                       f"{m.get('chi2_distinct_values')} |")
    out += ["", f"Fixed costs of the default pipeline's job (`run_report.yaml` "
            f"`fixed_costs`, slowest rank, median; bar ≤ {FIXED_COST_BAR_S} s):", ""]
    names = []
    for s in doc["summary"]:
        for n in s["tools"].get("homodyne-hpc/default", {}).get("fixed_costs", {}):
            if n not in names:
                names.append(n)
    out.append("| data | total | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for s in doc["summary"]:
        d = s["tools"].get("homodyne-hpc/default", {})
        fc = d.get("fixed_costs", {})
        out.append(f"| 23 × {s['frames']} | {fmt(d.get('fixed_costs_total_s'))} s "
                   f"({'met' if s.get('fixed_costs_bar_met') else 'NOT met'}) | " +
                   " | ".join(fmt(fc.get(n), '.3f') for n in names) + " |")
    out += ["", "Derived, not measured: Ceres whole / (ours whole − write_fitted_data − "
            "write_fitted_data_npz), the result files Ceres does not write:", ""]
    for s in doc["summary"]:
        out.append(f"* 23 × {s['frames']}: default "
                   f"{fmt(s.get('ratio_whole_default_without_fitted_data_writes'))}×, local "
                   f"{fmt(s.get('ratio_whole_local_without_fitted_data_writes'))}×")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--peer", required=True, help="the ceres_peer binary")
    ap.add_argument("--out", required=True, help="JSON to write (the .md beside it)")
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--sizes", default="200 500 1000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--command", default="")
    ap.add_argument("--warm-memory-gib", type=int, default=0,
                    help="touch this much memory once before the runs (see warm_memory)")
    ap.add_argument("--markdown-only", metavar="JSON",
                    help="recompute the summary of a stored JSON, rewrite it and its .md, "
                         "exit (no runs)")
    if len(sys.argv) == 3 and sys.argv[1] == "--markdown-only":
        with open(sys.argv[2]) as f:
            doc = json.load(f)
        # The summary again from the stored runs, so that a newer summary applies.
        doc["summary"] = []
        for ds in doc["datasets"]:
            rows = {(r["tool"], r["config"]): r for r in doc["rows"]
                    if r["dataset"] == ds["name"]}
            doc["summary"].append(summarise(None, doc, ds, rows))
        with open(sys.argv[2], "w") as f:
            json.dump(doc, f, indent=1)
        write_md(doc, os.path.splitext(sys.argv[2])[0] + ".md")
        return 0
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split()]
    if not sizes or a.repeats < 1:
        sys.exit("ceres_bench.py: need at least one size and one repeat")

    doc = {
        "benchmark": "whole job, homodyne-hpc vs the Ceres peer (bench/peers/ceres), "
                     "laminar_flow NLSQ, 23 angles, per-angle mode individual, truth start",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": a.command,
        "machine": w.machine_info(a.root, a.cores),
        "build": w.build_info(a.build),
        "settings": {
            "sizes_frames": sizes, "repeats": a.repeats, "ranks": a.ranks, "cores": a.cores,
            "ceres_command": f"/usr/bin/time -f %M ceres_peer CFG --x0 truth --threads {a.cores}"
                             " (LM, DENSE_SCHUR, analytic Jacobian, tol 1e-10)",
            "homodyne_command": "mpiexec --oversubscribe -n R --map-by slot:PE=T --bind-to "
                                "core bench/rss_wrap.sh DIR homodyne --config CFG "
                                "--output-dir DIR --threads T --no-autotune-cache -q",
            "configs": {
                "default": "bench/whole_job/whole_job_run.py base_config: the default NLSQ "
                           "pipeline, initial_parameters.values = truth, per_angle_mode "
                           "individual, tolerance 1e-10",
                "default_no_fitted_data": "default plus output.fitted_data none: no "
                                          "fitted_data.h5 or .npz",
                "local": "plus recovery {on_stall: none, phi0_restarts: 0} and "
                         "anti_degeneracy.hierarchical.enable false: one local fit",
            },
            "start": "Ceres: physical parameters, contrast and offset from <data>.truth.json; "
                     "homodyne-hpc: physical parameters at the truth, contrast/offset "
                     "estimated from the data (its initial scaling)",
            "target_ratio_whole_default": TARGET_RATIO,
            "fixed_costs_bar_s": FIXED_COST_BAR_S,
            "chi2_agreement_rel": CHI2_AGREEMENT,
        },
        "datasets": [], "rows": [], "summary": [],
    }
    md_path = os.path.splitext(a.out)[0] + ".md"
    # The disk and page cache the result files go to, before and after the warm-up.
    rates = {"before_warm_up": {"page_cache_gb_s": dd_rate(os.path.join(a.data_dir, "dd"), False),
                                "fdatasync_gb_s": dd_rate(os.path.join(a.data_dir, "dd"), True)}}
    if a.warm_memory_gib > 0:
        try:
            rates["warm_up"] = {"gib": a.warm_memory_gib,
                                "seconds": warm_memory(a.warm_memory_gib)}
        except OSError as e:  # /dev/shm too small or absent: measured without it
            rates["warm_up"] = {"gib": 0, "seconds": 0.0, "error": str(e)}
        rates["after_warm_up"] = {
            "page_cache_gb_s": dd_rate(os.path.join(a.data_dir, "dd"), False),
            "fdatasync_gb_s": dd_rate(os.path.join(a.data_dir, "dd"), True)}
    doc["machine"]["write_rates"] = rates

    def save():
        doc["machine"]["load_average_end"] = os.getloadavg()
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, a.out)
        write_md(doc, md_path)

    failed = False
    t0 = time.perf_counter()
    for frames in sizes:
        log(f"dataset 23 angles × {frames} frames")
        ds = w.make_dataset(a.build, a.data_dir, frames, a.cores)
        doc["datasets"].append(ds)
        rows = {}
        for tool, kind in TOOLS:
            row = {"dataset": ds["name"], "frames": frames, "tool": tool, "config": kind,
                   "runs": []}
            rows[(tool, kind)] = row
            doc["rows"].append(row)
        summary = None
        for rep in range(a.repeats):
            for (tool, kind), row in rows.items():
                res = run_ceres(a, ds, rep) if tool == "ceres" else run_ours(a, ds, kind, rep)
                row["runs"].append(res)
                log(f"  round {rep + 1}/{a.repeats} {tool + (' ' + kind if kind else ''):22s} "
                    f"{res['status']:7s} whole {res['wall_s']:7.3f} s  fit "
                    f"{res.get('fit_s') or float('nan'):7.3f} s  chi2 "
                    f"{res.get('chi2') or float('nan'):.12g}  load {res['load_1min_before']:.1f}")
                if res["status"] != "ok":
                    failed = True
                    log(f"    exit {res['exit_code']}; log tail:\n{res.get('log_tail', '')}")
                if summary is not None:
                    doc["summary"].remove(summary)
                summary = summarise(a, doc, ds, rows)
                doc["summary"].append(summary)
                save()
    doc["benchmark_seconds"] = time.perf_counter() - t0
    save()
    log(f"wrote {a.out} and {md_path} ({doc['benchmark_seconds']:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
