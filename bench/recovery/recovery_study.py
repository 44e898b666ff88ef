#!/usr/bin/python3
"""NLSQ recovery study: does a fit from the default start reach the minimum?

Generates seeded synthetic datasets with homodyne-synth (half static, half laminar_flow),
fits each one with homodyne in several configurations (a start at the truth, the default
start with default settings, the same with checkpoints on, CMA-ES on, and any variant given
with --variant), and compares every fit's chi-squared with the dataset's reference minimum:
the lowest chi-squared of all fits of that dataset. Writes recovery.json (every run and the
summary), recovery.md (the table) and recovery.png into the output directory and prints the
Markdown table. docs/robustness.md describes the study and its definitions.

Run it through bench/recovery/run_recovery_study.sh (sets up MPI and the defaults).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

# Thresholds of the issue "Trustworthy NLSQ answers": a fit reaches the reference minimum
# when chi2 <= REACH * chi2_ref; a `converged` label on a fit above AWAY * chi2_ref is a
# wrong label (it must never happen).
REACH = 1.001
AWAY = 1.01

# Geometry of the project's examples (examples/laminar_flow_demo.yaml, tests/cli).
DT = 0.1
Q = 0.0054
GAP = 2.0e6

STATIC_NAMES = ["D0", "alpha", "D_offset"]
LAMINAR_NAMES = STATIC_NAMES + ["gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]

# Configurations. Each fits every dataset; `start` is "truth" (initial_parameters.values =
# the true physical parameters) or "default" (values: null, the project's default start);
# `settings` are dotted config keys set on top of the minimal config (no other
# optimization keys, so every other setting is the project's default). `{run}` in a value
# is replaced by the run's directory. A configuration whose keys this build rejects, or
# accepts without using them, is reported "unavailable" instead of being run.
CONFIGURATIONS = {
    "truth": {"start": "truth", "settings": {},
              "about": "start at the true parameters, default settings"},
    "default": {"start": "default", "settings": {},
                "about": "default start (values: null), default settings"},
    "default+checkpoints": {
        "start": "default",
        "settings": {"optimization.streaming.enable_checkpoints": True,
                     "optimization.streaming.checkpoint_frequency": 3,
                     "optimization.streaming.checkpoint_dir": "{run}/checkpoints"},
        "about": "default start, checkpoints every 3 iterations"},
    "cmaes": {"start": "default", "settings": {"optimization.nlsq.cmaes.enable": True},
              "about": "default start, CMA-ES global search on"},
    # The datasets are below the default screen_max_points: these force the screen on rows
    # of the restarts and the phi0 check (every 3rd to 7th row) to check its rule.
    "screened": {"start": "default",
                 "settings": {"optimization.nlsq.recovery.screen_max_points": 2000},
                 "about": "default start, restarts and phi0 check screened on rows "
                          "(screen_max_points 2000)"},
    "screened+checkpoints": {
        "start": "default",
        "settings": {"optimization.nlsq.recovery.screen_max_points": 2000,
                     "optimization.streaming.enable_checkpoints": True,
                     "optimization.streaming.checkpoint_frequency": 3,
                     "optimization.streaming.checkpoint_dir": "{run}/checkpoints"},
        "about": "the screened configuration with checkpoints every 3 iterations"},
}
DEFAULT_CONFIGS = ["truth", "default", "default+checkpoints", "cmaes"]
# Pairs whose final parameters must be bitwise identical (checkpoints must not change the
# answer).
BITWISE_PAIRS = [("default", "default+checkpoints"), ("screened", "screened+checkpoints")]


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------- datasets

def loguniform(rng, lo, hi):
    return float(10.0 ** rng.uniform(math.log10(lo), math.log10(hi)))


def draw_dataset(seed, index):
    """Parameters of dataset `index`. Each dataset has its own generator keyed by
    (seed, index), so the first k datasets do not depend on how many are drawn."""
    rng = np.random.default_rng([seed, index])
    mode = "static" if index % 2 == 0 else "laminar_flow"
    n_angles = int(rng.integers(3, 9))          # 3..8
    frames = int(rng.integers(60, 121))         # 60..120
    # Evenly spaced angles over [0, 180) with a random common shift, so the flow direction
    # (phi0) is not always aligned with an angle.
    shift = rng.uniform(0.0, 180.0 / n_angles)
    angles = [round(shift + 180.0 * k / n_angles, 1) for k in range(n_angles)]
    D0 = loguniform(rng, 10 ** 2.8, 10 ** 4.3)
    p = {"D0": D0,
         "alpha": float(rng.uniform(-1.2, 0.6)),
         # A small positive offset: D(t) stays positive, and D_offset is weakly identified
         # (correlated with D0 near alpha = 0), as in measured data.
         "D_offset": float(D0 * rng.uniform(0.0, 0.02))}
    g0 = loguniform(rng, 5e-4, 3e-2)
    beta = float(rng.uniform(-0.3, 0.3))
    g_off = float(g0 * rng.uniform(0.0, 0.05))
    phi0 = float(rng.uniform(-8.0, 8.0))
    if mode == "laminar_flow":
        p.update({"gamma_dot_t0": g0, "beta": beta, "gamma_dot_t_offset": g_off, "phi0": phi0})
    return {
        "id": f"ds{index:03d}", "index": index, "mode": mode, "angles": angles,
        "frames": frames, "truth": p,
        "contrast": float(rng.uniform(0.1, 0.3)),
        "offset": float(1.0 + rng.uniform(-0.02, 0.02)),
        "noise": loguniform(rng, 5e-4, 2e-3),
        "noise_seed": int(rng.integers(1, 2 ** 31 - 1)),
    }


def base_config(ds, data_dir):
    cfg = {
        "analysis_mode": ds["mode"],
        "analyzer_parameters": {"dt": DT, "scattering": {"wavevector_q": Q}},
        "experimental_data": {"data_folder_path": data_dir, "data_file_name": "data.h5"},
        "initial_parameters": {"values": None},
    }
    if ds["mode"] == "laminar_flow":
        cfg["analyzer_parameters"]["geometry"] = {"stator_rotor_gap": GAP}
    return cfg


def set_key(cfg, dotted, value):
    node = cfg
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise SystemExit(f"error: config key {dotted}: {part} is not a mapping")
    node[parts[-1]] = value


def write_yaml(path, cfg):
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, default_flow_style=None)


def generate_dataset(ds, ds_dir, synth, make_base=None):
    """make_base(ds, ds_dir): the config homodyne-synth reads (default: base_config)."""
    os.makedirs(ds_dir, exist_ok=True)
    cfg_path = os.path.join(ds_dir, "synth.yaml")
    write_yaml(cfg_path, (make_base or base_config)(ds, ds_dir))
    cmd = [synth, "--config", cfg_path, "-o", os.path.join(ds_dir, "data.h5"), "--force", "-q",
           "--frames", str(ds["frames"]), "--angles", ",".join(f"{a:g}" for a in ds["angles"]),
           "--contrast", repr(ds["contrast"]), "--offset", repr(ds["offset"]),
           "--noise", repr(ds["noise"]), "--seed", str(ds["noise_seed"])]
    for name, value in ds["truth"].items():
        cmd += ["--param", f"{name}={value!r}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"error: homodyne-synth failed for {ds['id']} (exit {r.returncode}):\n"
                         f"{' '.join(cmd)}\n{r.stdout}{r.stderr}")


# --------------------------------------------------------------------------- fits

def fit_config(ds, ds_dir, run_dir, conf):
    cfg = base_config(ds, ds_dir)
    if conf["start"] == "truth":
        names = STATIC_NAMES if ds["mode"] == "static" else LAMINAR_NAMES
        cfg["initial_parameters"] = {"parameter_names": names,
                                     "values": [ds["truth"][n] for n in names]}
    for key, value in conf["settings"].items():
        if isinstance(value, str):
            value = value.replace("{run}", run_dir)
        set_key(cfg, key, value)
    return cfg


def probe_configuration(name, conf, ds, ds_dir, tools, work):
    """None if this build honours the configuration's keys, else why not. homodyne-config
    --validate exits 2 naming an unknown key, and with --verbose lists keys it accepts without
    using them (homodyne's documented keys that homodyne-hpc does not implement)."""
    if not conf["settings"]:
        return None
    probe_dir = os.path.join(work, "probe", name)
    os.makedirs(probe_dir, exist_ok=True)
    path = os.path.join(probe_dir, "config.yaml")
    write_yaml(path, fit_config(ds, ds_dir, probe_dir, conf))
    r = subprocess.run([tools["config"], "--validate", path, "--verbose"], capture_output=True,
                       text=True)
    text = r.stdout + r.stderr
    keys = list(conf["settings"])
    if r.returncode != 0:
        named = [k for k in keys if k in text or k.split(".")[-1] in text]
        first = next((ln.strip() for ln in text.splitlines() if "error" in ln.lower()),
                     text.strip().splitlines()[-1] if text.strip() else "")
        first = first.replace(path + ": ", "").replace(path, "config.yaml")
        return (f"rejected by this build (homodyne-config exit {r.returncode}"
                f"{', key ' + ', '.join(named) if named else ''}): {first}")
    m = re.search(r"keys accepted but not used by homodyne-hpc:\n((?:\s{4}\S.*\n?)*)", text)
    if m:
        unused = {ln.strip() for ln in m.group(1).splitlines() if ln.strip()}
        ignored = [k for k in keys if k in unused]
        if ignored:
            return "accepted but not used by this build: " + ", ".join(ignored)
    return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_run(out_dir):
    """What the run wrote: chi2, the status label, iterations, times, the answer."""
    rec = {}
    params = read_json(os.path.join(out_dir, "nlsq", "parameters.json"))
    analysis = read_json(os.path.join(out_dir, "nlsq", "analysis_results_nlsq.json"))
    metrics = read_json(os.path.join(out_dir, "nlsq", "convergence_metrics.json"))
    results = read_json(os.path.join(out_dir, "homodyne_results.json"))
    report = None
    try:
        with open(os.path.join(out_dir, "run_report.yaml")) as f:
            report = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        pass
    if params:
        rec["chi2"] = params.get("chi_squared")
        rec["reduced_chi2"] = params.get("reduced_chi_squared")
        rec["status"] = params.get("convergence_status")
        rec["physical"] = {k: v.get("value") for k, v in params.get("parameters", {}).items()}
    if analysis:
        summ = analysis.get("optimization_summary", {})
        rec["iterations"] = summ.get("iterations")
        rec["execution_time"] = summ.get("execution_time")
        rec["per_angle_mode"] = (params or {}).get("per_angle", {}).get("per_angle_mode")
        deg = analysis.get("degeneracy", {})
        rec["parameters_at_bounds"] = deg.get("parameters_at_bounds")
    if metrics:
        rec["quality_warnings"] = metrics.get("quality_warnings")
        rec["recovery_actions"] = metrics.get("recovery_actions")
    if results:
        # Full vector [contrast_k…, offset_k…, physics…] as written (shortest round-trip
        # decimal, so parsing gives the exact doubles); compared bit for bit below.
        rec["x"] = results.get("parameters")
        rec["threads_per_rank"] = (results.get("device_config") or {}).get("threads_per_rank")
    if report:
        st = report.get("status", {}) or {}
        rec["report_result"] = st.get("result")
        rec["report_message"] = st.get("message")
        timing = report.get("timing_seconds", {}) or {}
        rec["fit_seconds"] = (timing.get("fit") or {}).get("max")
        thr = report.get("throughput", {}) or {}
        rec["data_passes"] = thr.get("data_passes")
        if "status" not in rec and st.get("result"):
            rec["status"] = st.get("result")
    return rec


def run_fit(ds, ds_dir, conf_name, conf, tools, work, ranks, timeout, make_config=None):
    """make_config(ds, ds_dir, run_dir, conf): the fit's config (default: fit_config)."""
    run_dir = os.path.join(work, "runs", ds["id"], conf_name)
    # A fresh directory: a run that fails must not leave the previous run's files to read.
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    cfg_path = os.path.join(run_dir, "config.yaml")
    write_yaml(cfg_path, (make_config or fit_config)(ds, ds_dir, run_dir, conf))
    out_dir = os.path.join(run_dir, "out")
    # --strict: a variant whose key this build does not know is reported unavailable,
    # never run as the default fit under its name.
    cmd = [tools["mpiexec"], "-n", str(ranks), tools["homodyne"], "--config", cfg_path,
           "--output-dir", out_dir, "--strict"]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        code, text = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        code = None
        text = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes)
                else (e.stdout or "")) + f"\n(timed out after {timeout} s)"
    wall = time.monotonic() - t0
    with open(os.path.join(run_dir, "log.txt"), "w") as f:
        f.write(text)
    rec = {"dataset": ds["id"], "config": conf_name, "exit_code": code,
           "wall_seconds": wall}
    rec.update(read_run(out_dir))
    if code is None:
        rec["status"] = "timeout"
    elif code != 0:
        rec.setdefault("status", "error")
        # homodyne's own message ("error: …"), not the tail of mpiexec's banner.
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("error:")]
        rec["error"] = errors[0] if errors else " | ".join(lines[-3:])
        # Bad input naming one of the configuration's keys: this build does not have it.
        if code == 2 and any(k in text or k.split(".")[-1] in text for k in conf["settings"]):
            rec["unavailable"] = rec["error"]
    return rec


# --------------------------------------------------------------------------- analysis

def bits(x):
    return struct.pack("<d", float(x)).hex()


def finite(v):
    return isinstance(v, (int, float)) and math.isfinite(v)


def analyse(datasets, records, configs, unavailable):
    by = {(r["dataset"], r["config"]): r for r in records}
    refs = {}
    for ds in datasets:
        chis = [r["chi2"] for (d, c), r in by.items() if d == ds["id"] and finite(r.get("chi2"))]
        refs[ds["id"]] = min(chis) if chis else None
    for r in records:
        ref = refs.get(r["dataset"])
        if finite(r.get("chi2")) and ref and ref > 0:
            r["chi2_ratio"] = r["chi2"] / ref
        else:
            r["chi2_ratio"] = None
    summary = {}
    for name in configs:
        if name in unavailable:
            summary[name] = {"available": False, "reason": unavailable[name]}
            continue
        rs = [by[(ds["id"], name)] for ds in datasets if (ds["id"], name) in by]
        n = len(rs)
        reached = [r for r in rs if r["chi2_ratio"] is not None and r["chi2_ratio"] <= REACH]
        away = [r for r in rs if r["chi2_ratio"] is None or r["chi2_ratio"] > AWAY]
        wrong = [r for r in rs if r.get("status") == "converged"
                 and r["chi2_ratio"] is not None and r["chi2_ratio"] > AWAY]
        labels = {}
        for r in rs:
            labels[str(r.get("status"))] = labels.get(str(r.get("status")), 0) + 1
        walls = [r["wall_seconds"] for r in rs]
        fits = [r["fit_seconds"] for r in rs if finite(r.get("fit_seconds"))]
        iters = [r["iterations"] for r in rs if isinstance(r.get("iterations"), int)]
        per_mode = {}
        for mode in ("static", "laminar_flow"):
            ids = {ds["id"] for ds in datasets if ds["mode"] == mode}
            m = [r for r in rs if r["dataset"] in ids]
            ok = [r for r in m if r["chi2_ratio"] is not None and r["chi2_ratio"] <= REACH]
            per_mode[mode] = {"runs": len(m), "reached": len(ok)}
        summary[name] = {
            "available": True,
            "runs": n,
            "reached_reference": len(reached),
            "fraction_reached": len(reached) / n if n else None,
            "between_reach_and_away": sum(1 for r in rs if r["chi2_ratio"] is not None
                                          and REACH < r["chi2_ratio"] <= AWAY),
            "away_from_reference": len(away),
            "converged_away": len(wrong),
            "converged_away_datasets": [r["dataset"] for r in wrong],
            "status_counts": labels,
            "nonzero_exit": sum(1 for r in rs if r["exit_code"] != 0),
            "per_mode": per_mode,
            "median_wall_seconds": float(np.median(walls)) if walls else None,
            "total_wall_seconds": float(sum(walls)),
            "median_fit_seconds": float(np.median(fits)) if fits else None,
            "total_fit_seconds": float(sum(fits)),
            "median_iterations": float(np.median(iters)) if iters else None,
            "worst_ratio": max((r["chi2_ratio"] for r in rs if r["chi2_ratio"] is not None),
                               default=None),
        }
    bitwise = {}
    for a, b in BITWISE_PAIRS:
        if a not in configs or b not in configs or a in unavailable or b in unavailable:
            continue
        same, diff = 0, []
        for ds in datasets:
            ra, rb = by.get((ds["id"], a)), by.get((ds["id"], b))
            if not ra or not rb:
                continue
            xa, xb = ra.get("x"), rb.get("x")
            if xa and xb and len(xa) == len(xb) and \
                    all(bits(u) == bits(v) for u, v in zip(xa, xb)) and \
                    bits(ra["chi2"]) == bits(rb["chi2"]):
                same += 1
            else:
                rel = None
                if finite(ra.get("chi2")) and finite(rb.get("chi2")) and ra["chi2"] != 0:
                    rel = abs(rb["chi2"] - ra["chi2"]) / abs(ra["chi2"])
                diff.append({"dataset": ds["id"], "chi2_" + a: ra.get("chi2"),
                             "chi2_" + b: rb.get("chi2"), "chi2_relative_difference": rel,
                             "iterations_" + a: ra.get("iterations"),
                             "iterations_" + b: rb.get("iterations")})
        rels = [m["chi2_relative_difference"] for m in diff
                if m["chi2_relative_difference"] is not None]
        bitwise[f"{a} vs {b}"] = {
            "identical": same, "mismatches": len(diff),
            # Differing bits with the same minimum (both within 1.001 of the reference) vs a
            # different answer altogether.
            "mismatches_both_at_reference": sum(
                1 for m in diff
                if all((by[(m["dataset"], c)]["chi2_ratio"] or math.inf) <= REACH
                       for c in (a, b))),
            "median_chi2_relative_difference": float(np.median(rels)) if rels else None,
            "mismatched": diff}
    return refs, summary, bitwise


def markdown_table(summary, bitwise, configs):
    head = ("| configuration | reached χ² ≤ 1.001·ref | static | laminar | `converged` "
            "above 1.01·ref | labels | median iterations | median / total wall s | "
            "median fit s |\n|---|---|---|---|---|---|---|---|---|\n")
    rows = []
    for name in configs:
        s = summary[name]
        if not s["available"]:
            rows.append(f"| {name} | unavailable: {s['reason']} | | | | | | | |")
            continue
        pm = s["per_mode"]
        labels = ", ".join(f"{k} {v}" for k, v in sorted(s["status_counts"].items()))
        wrong = str(s["converged_away"])
        if s["converged_away_datasets"]:
            wrong += " (" + ", ".join(s["converged_away_datasets"]) + ")"
        fit = "–" if s["median_fit_seconds"] is None else f"{s['median_fit_seconds']:.2f}"
        it = "–" if s["median_iterations"] is None else f"{s['median_iterations']:g}"
        rows.append(
            f"| {name} | {s['reached_reference']}/{s['runs']} "
            f"({100 * s['fraction_reached']:.0f} %) | "
            f"{pm['static']['reached']}/{pm['static']['runs']} | "
            f"{pm['laminar_flow']['reached']}/{pm['laminar_flow']['runs']} | {wrong} | "
            f"{labels} | {it} | {s['median_wall_seconds']:.2f} / "
            f"{s['total_wall_seconds']:.0f} | {fit} |")
    text = head + "\n".join(rows) + "\n"
    for pair, b in bitwise.items():
        text += (f"\nBitwise {pair}: {b['identical']} identical, {b['mismatches']} "
                 f"differ")
        if b["mismatched"]:
            rels = [m["chi2_relative_difference"] for m in b["mismatched"]
                    if m["chi2_relative_difference"] is not None]
            text += f"; {b['mismatches_both_at_reference']} of those differ with both at the "
            text += "reference minimum"
            if rels:
                text += (f"; χ² relative difference median {np.median(rels):.1e}, "
                         f"max {max(rels):.1e}")
        text += ".\n"
    return text


def draw_figure(path, datasets, records, configs, unavailable):
    """χ²/χ²_ref − 1 per dataset (log axis), one panel per analysis mode, one colour per
    configuration, the marker the status label; a red ring marks a `converged` label above
    1.01·χ²_ref with exit 0."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    markers = {"converged": "o", "max_iter": "^", "stalled": "s", "failed": "X",
               "error": "X", "timeout": "X"}
    floor = 1e-12   # ratios within this of 1 are drawn at the floor
    by = {(r["dataset"], r["config"]): r for r in records}
    shown = [c for c in configs if c not in unavailable]
    width = 0.7 / max(1, len(shown))
    modes = [m for m in ("static", "laminar_flow", "two_component")
             if any(d["mode"] == m for d in datasets)]
    per_mode = {m: [d for d in datasets if d["mode"] == m] for m in modes}
    n_max = max(len(v) for v in per_mode.values())
    fig, axes = plt.subplots(len(modes), 1, squeeze=False,
                             figsize=(max(7.0, 0.15 * n_max + 3.5), 2.9 * len(modes) + 0.6))
    for ax, mode in zip(axes[:, 0], modes):
        group = per_mode[mode]
        for ci, name in enumerate(shown):
            for di, ds in enumerate(group):
                r = by.get((ds["id"], name))
                if r is None or r["chi2_ratio"] is None:
                    continue
                status = str(r.get("status"))
                # A wrong answer a script would take: `converged` with exit 0 (a misfit
                # verdict exits 5).
                wrong = (status == "converged" and r["chi2_ratio"] > AWAY
                         and r.get("exit_code", 0) == 0)
                ax.scatter(di + (ci - (len(shown) - 1) / 2) * width,
                           max(r["chi2_ratio"] - 1.0, floor), s=70 if wrong else 24,
                           marker=markers.get(status, "D"), color=f"C{ci}",
                           edgecolors="red" if wrong else "none", linewidths=1.5, zorder=3,
                           label=name if di == 0 else None)
        ax.axhline(REACH - 1, color="k", ls="--", lw=1, label="χ² = 1.001·ref")
        ax.axhline(AWAY - 1, color="red", ls=":", lw=1, label="χ² = 1.01·ref")
        ax.set_yscale("log")
        ax.set_ylim(floor / 3, None)
        ax.set_xlim(-0.7, max(len(group), 1) - 0.3)
        ax.set_xticks(range(len(group)))
        ax.set_xticklabels([ds["id"][2:] for ds in group], rotation=90, fontsize=6)
        ax.set_ylabel("χ²/χ²_ref − 1")
        ax.set_title(f"{mode} ({len(group)} datasets)", fontsize=10)
    axes[-1, 0].set_xlabel("dataset (points at the bottom are the reference, within 1e-12)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for status, mk in markers.items():
        if status in ("error", "timeout"):
            continue
        handles.append(plt.Line2D([], [], marker=mk, color="gray", ls="none"))
        labels.append(f"label {status}")
    handles.append(plt.Line2D([], [], marker="o", color="gray", markeredgecolor="red", ls="none",
                              markersize=9))
    labels.append("`converged`, exit 0, above 1.01·ref")
    axes[0, 0].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"NLSQ recovery: χ² of each fit against the dataset's reference minimum",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# --------------------------------------------------------------------------- main

def replace_doc_table(doc, table):
    begin, end = "<!-- recovery-table:begin -->", "<!-- recovery-table:end -->"
    with open(doc) as f:
        text = f.read()
    if begin not in text or end not in text:
        raise SystemExit(f"error: {doc} has no {begin} … {end} block to replace")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + table + end + tail)


def parse_variant(text):
    """NAME:key=value[,key=value…] → a default-start configuration (values parsed as YAML)."""
    if ":" not in text:
        raise SystemExit(f"error: --variant {text!r}: expected NAME:key=value[,key=value]")
    name, rest = text.split(":", 1)
    settings = {}
    for item in filter(None, rest.split(",")):
        if "=" not in item:
            raise SystemExit(f"error: --variant {text!r}: {item!r} is not key=value")
        k, v = item.split("=", 1)
        settings[k.strip()] = yaml.safe_load(v)
    return name, {"start": "default", "settings": settings, "about": f"default start, {rest}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir", help="directory of homodyne, homodyne-synth, "
                    "homodyne-config (build/apps)")
    ap.add_argument("--out", help="output directory (JSON, Markdown, PNG)")
    ap.add_argument("--datasets", type=int, default=100,
                    help="number of datasets (default 100: at 98 %% a miss is 1 %%)")
    ap.add_argument("--seed", type=int, default=2026, help="seed of the dataset draws")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks per fit (default 1)")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                    help=f"comma-separated configurations (known: {', '.join(CONFIGURATIONS)})")
    ap.add_argument("--variant", action="append", default=[],
                    help="extra configuration NAME:key=value[,key=value] (default start; "
                         "repeatable), e.g. stall:optimization.nlsq.max_iterations=50")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per fit (default 600)")
    ap.add_argument("--work-dir", help="where datasets and runs go (default: a temporary "
                    "directory, removed at the end)")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary directory")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--update-doc", help="replace the table block of this Markdown file "
                    "(docs/robustness.md) with this run's table")
    ap.add_argument("--no-figure", action="store_true")
    ap.add_argument("--from-json", help="run nothing: print the table of an earlier run's "
                    "recovery.json (and put it into --update-doc)")
    args = ap.parse_args()

    if args.from_json:
        with open(args.from_json) as f:
            old = json.load(f)
        table = markdown_table(old["summary"], old["bitwise"], list(old["summary"]))
        if args.update_doc:
            replace_doc_table(args.update_doc, table)
        print(table, end="")
        return
    if not args.bin_dir or not args.out:
        ap.error("--bin-dir and --out are required (unless --from-json)")

    confs = dict(CONFIGURATIONS)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for v in args.variant:
        name, conf = parse_variant(v)
        confs[name] = conf
        configs.append(name)
    for c in configs:
        if c not in confs:
            raise SystemExit(f"error: unknown configuration {c!r}; known: {', '.join(confs)}")
    if args.datasets < 1:
        raise SystemExit("error: --datasets must be at least 1")

    tools = {"homodyne": os.path.join(args.bin_dir, "homodyne"),
             "synth": os.path.join(args.bin_dir, "homodyne-synth"),
             "config": os.path.join(args.bin_dir, "homodyne-config")}
    for k, p in tools.items():
        if not os.access(p, os.X_OK):
            raise SystemExit(f"error: {p} not found or not executable (build first: "
                             "bash scripts/build.sh)")
    mpiexec = shutil.which(args.mpiexec)
    if not mpiexec:
        raise SystemExit(f"error: {args.mpiexec} not found on PATH")
    tools["mpiexec"] = mpiexec

    os.makedirs(args.out, exist_ok=True)
    temp_work = args.work_dir is None
    work = args.work_dir or tempfile.mkdtemp(prefix="homodyne_recovery_")
    os.makedirs(work, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    # The source the study starts from (a commit made while it runs is not the one it ran).
    git_at_start = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                                   "describe", "--always", "--dirty"],
                                  capture_output=True, text=True).stdout.strip()
    load_at_start = os.getloadavg()  # the times are only comparable on a quiet machine
    t_start = time.monotonic()
    try:
        datasets = [draw_dataset(args.seed, i) for i in range(args.datasets)]
        unavailable = {}
        records = []
        for i, ds in enumerate(datasets):
            ds_dir = os.path.join(work, "datasets", ds["id"])
            generate_dataset(ds, ds_dir, tools["synth"])
            if i == 0:
                for name in configs:
                    why = probe_configuration(name, confs[name], ds, ds_dir, tools, work)
                    if why:
                        unavailable[name] = why
                        log(f"configuration {name}: unavailable ({why})")
            line = []
            for name in configs:
                if name in unavailable:
                    continue
                rec = run_fit(ds, ds_dir, name, confs[name], tools, work, args.ranks,
                              args.timeout)
                if rec.get("unavailable"):
                    unavailable[name] = rec["unavailable"]
                    log(f"configuration {name}: unavailable ({rec['unavailable']})")
                    continue
                records.append(rec)
                chi = rec.get("chi2")
                line.append(f"{name} {rec.get('status')} "
                            f"{chi:.6g}" if finite(chi) else f"{name} {rec.get('status')} –")
            log(f"[{i + 1}/{len(datasets)}] {ds['id']} {ds['mode']:<12} "
                f"{len(ds['angles'])} angles × {ds['frames']} frames: " + "; ".join(line))
        # A configuration found unavailable part-way keeps no partial records.
        records = [r for r in records if r["config"] not in unavailable]
        refs, summary, bitwise = analyse(datasets, records, configs, unavailable)
    finally:
        if temp_work and not args.keep_work:
            shutil.rmtree(work, ignore_errors=True)
        elif temp_work:
            log(f"runs kept in {work}")
    elapsed = time.monotonic() - t_start

    table = markdown_table(summary, bitwise, configs)
    for ds in datasets:
        ds["reference_chi2"] = refs[ds["id"]]
    doc = {
        "study": "NLSQ recovery (docs/robustness.md)",
        "started_utc": started.isoformat(timespec="seconds"),
        "elapsed_seconds": elapsed,
        "command": " ".join(sys.argv),
        "seed": args.seed, "ranks": args.ranks, "n_datasets": len(datasets),
        "threads_per_rank": next((r["threads_per_rank"] for r in records
                                  if r.get("threads_per_rank")), None),
        "thresholds": {"reach": REACH, "away": AWAY},
        "definitions": {
            "reference_chi2": "min chi2 over every fit of the dataset in this study",
            "reached": "chi2 <= reach * reference_chi2",
            "converged_away": "status 'converged' and chi2 > away * reference_chi2",
        },
        "configurations": {c: confs[c] for c in configs},
        "unavailable": unavailable,
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "load_average_start": load_at_start, "load_average_end": os.getloadavg()},
        "git": git_at_start,
        "summary": summary,
        "bitwise": bitwise,
        "datasets": datasets,
        "runs": records,
    }
    with open(os.path.join(args.out, "recovery.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, "recovery.md"), "w") as f:
        f.write(table)
    if not args.no_figure:
        draw_figure(os.path.join(args.out, "recovery.png"), datasets, records, configs,
                    unavailable)
    if args.update_doc:
        replace_doc_table(args.update_doc, table)
    log("")
    log(table)
    for name in configs:
        s = summary[name]
        if s.get("converged_away"):
            log(f"WARNING: {name}: {s['converged_away']} fit(s) labelled converged above "
                f"{AWAY}×χ²_ref: {', '.join(s['converged_away_datasets'])}")
    log(f"study took {elapsed:.0f} s; results in {args.out}")


if __name__ == "__main__":
    main()
