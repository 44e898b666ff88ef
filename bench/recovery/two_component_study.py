#!/usr/bin/python3
"""Two-component NLSQ recovery study: seeded synthetic two-component datasets fitted from the
template's start (initial_parameters.values: null, i.e. xpcsjax's registry defaults) and
from the truth. For each fit: its label, chi2 against the dataset's reference minimum (the
lowest chi2 of all its fits), and every parameter against the truth (z = |fit - truth| / sd,
sd from the fit's covariance). docs/model.md ("Recovery from the template's start") gives
the definitions and the last run's table.

Usage: bench/recovery/two_component_study.py --bin-dir build/apps --out DIR
         [--datasets 20] [--seed 2027] [--ranks 1] [--variant NAME:key=value,...]
"""

import argparse
import datetime
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recovery_study as rs  # noqa: E402  (shared helpers: YAML, runs, result files)

DT = 0.1
Q = 0.0054
NAMES = ["D0_ref", "alpha_ref", "D_offset_ref", "D0_sample", "alpha_sample", "D_offset_sample",
         "v0", "v_beta", "v_offset", "f0", "f1", "f2", "f3", "phi0_het"]
# The tolerance: |fit - truth| <= Z_MAX * sd for the transport, velocity and phi0_het
# parameters, and the sample fraction f_s(t) within FRACTION_TOL of the true curve over the
# window: f0 and f2 enter only as f0*exp(-f1*f2) (f2 is held at its true 0), and with
# f1 = 0 f0 and f3 enter only as f0 + f3, so the curve is what the data determine. With
# alpha = 0 a D0 and its D_offset are one parameter (alphas are drawn away from 0).
Z_MAX = 4.0
FRACTION_TOL = 0.05
REACH = 1.001
# The second judgement, by what the data determine: each population's half decay
# h(t1, t2) = exp(-q^2/2 * |P(t2) - P(t1)|) (P the trapezoid prefix of its rate, the model's
# own guards) within DECAY_TOL of the truth's at every pair of the grid, instead of its three
# rate parameters within Z_MAX sd. On the D0-alpha-D_offset ridge the three move far
# (in units of their linearised sd) while the decay the data see stays put.
DECAY_TOL = 0.05

CONFIGS = {
    "truth": {"start": "truth", "settings": {}},
    "template": {"start": "default", "settings": {}},
}


def keep_fraction_inside(f0, f1, t_end, floor=None):
    """f0 rescaled so that f_s(t) = f0*exp(f1*t) stays below 0.85 over the window (the soft
    clip stays the identity) and, with a floor, lifted to it where that keeps f_s below 0.85."""
    hi = f0 * math.exp(max(f1, 0.0) * t_end)
    f0 = f0 if hi < 0.85 else f0 * 0.85 / hi
    if floor is not None:
        lo = f0 * math.exp(min(f1, 0.0) * t_end)
        lifted = f0 * floor / lo
        if lo <= floor and lifted * math.exp(max(f1, 0.0) * t_end) < 0.85:
            f0 = lifted
    return f0


def draw_truth(rng, d_ref, d_s, alpha, v0, f0, f1, f3_hi):
    """The 14 parameters around the drawn decay rates and fraction (alpha and v0 ranges as
    (low, high); v0 log-uniform). The draws' order is fixed: it defines the datasets."""
    return {"D0_ref": d_ref, "alpha_ref": float(rng.uniform(*alpha)),
            "D_offset_ref": float(d_ref * rng.uniform(0.0, 0.02)),
            "D0_sample": d_s, "alpha_sample": float(rng.uniform(*alpha)),
            "D_offset_sample": float(d_s * rng.uniform(0.0, 0.02)),
            "v0": rs.loguniform(rng, *v0), "v_beta": float(rng.uniform(0.1, 0.9)),
            "v_offset": float(rng.uniform(-5.0, 5.0)),
            "f0": f0, "f1": f1, "f2": 0.0, "f3": float(rng.uniform(0.0, f3_hi)),
            "phi0_het": float(rng.uniform(-5.0, 5.0))}


def dataset_record(rng, ds_id, index, angles, frames, truth, kind, contrast_hi, **extra):
    """One dataset's record: its grid and truth, then its contrast, offset and noise."""
    return {"id": ds_id, "index": index, "mode": "two_component",
            "angles": angles, "frames": frames, "truth": truth, **extra,
            "fraction": ["constant", "rising", "falling"][kind],
            "contrast": float(rng.uniform(0.1, contrast_hi)),
            "offset": float(1.0 + rng.uniform(-0.02, 0.02)),
            "noise": rs.loguniform(rng, 5e-4, 2e-3),
            "noise_seed": int(rng.integers(1, 2 ** 31 - 1))}


def draw_dataset(seed, index):
    rng = np.random.default_rng([seed, index])
    n_angles = int(rng.integers(3, 7))
    frames = int(rng.integers(40, 71))
    shift = rng.uniform(0.0, 180.0 / n_angles)
    angles = [round(shift + 180.0 * k / n_angles, 1) for k in range(n_angles)]
    d_ref = rs.loguniform(rng, 500.0, 5000.0)
    d_s = rs.loguniform(rng, 3000.0, 30000.0)
    # Fraction dynamics: a third constant, a third rising, a third falling; f_s inside
    # (0.1, 0.9) over the window so the soft clip stays the identity.
    kind = index % 3
    f1 = 0.0 if kind == 0 else (1 if kind == 1 else -1) * float(rng.uniform(0.1, 0.3))
    f0 = keep_fraction_inside(float(rng.uniform(0.25, 0.45)), f1, frames * DT)
    p = draw_truth(rng, d_ref, d_s, (-0.5, 0.5), (100.0, 600.0), f0, f1, 0.1)
    return dataset_record(rng, f"tc{index:03d}", index, angles, frames, p, kind, 0.3)


def draw_dataset_broad(seed, index):
    """The draws issue-level acceptance asks for: each population's D0 log-uniform over 1.5-2
    decades, alpha in [-0.5, 0.3], v0 over 1.5 decades, f0 in [0.25, 0.75], 4-6 angles with
    close pairs near 0 and 90 degrees (as 0/5/88/92), 100-200 frames."""
    rng = np.random.default_rng([seed, 7919, index])
    frames = int(rng.integers(100, 201))
    base = float(rng.uniform(-10.0, 10.0))
    angles = [base, base + float(rng.uniform(3.0, 8.0)),
              base + 90.0 + float(rng.uniform(-4.0, 0.0)),
              base + 90.0 + float(rng.uniform(1.0, 4.0))]
    for _ in range(int(rng.integers(0, 3))):
        angles.append(base + float(rng.uniform(20.0, 160.0)))
    angles = sorted(round(a, 1) for a in angles)
    d_ref = rs.loguniform(rng, 300.0, 10000.0)
    d_s = rs.loguniform(rng, 1000.0, 100000.0)
    kind = index % 3
    f1 = 0.0 if kind == 0 else (1 if kind == 1 else -1) * float(rng.uniform(0.02, 0.1))
    f0 = keep_fraction_inside(float(rng.uniform(0.25, 0.75)), f1, frames * DT, floor=0.12)
    p = draw_truth(rng, d_ref, d_s, (-0.5, 0.3), (30.0, 1000.0), f0, f1, 0.05)
    return dataset_record(rng, f"tb{index:03d}", index, angles, frames, p, kind, 0.5,
                          draws="broad")


def base_config(ds, data_dir):
    return {"analysis_mode": "two_component",
            "analyzer_parameters": {"dt": DT, "scattering": {"wavevector_q": Q}},
            "experimental_data": {"data_folder_path": data_dir, "data_file_name": "data.h5"},
            "initial_parameters": {"parameter_names": NAMES, "values": None,
                                   "fixed_parameters": {"f2": 0.0}},
            # v_beta's registry window [0, 2] holds every drawn truth.
            }


def fit_config(ds, ds_dir, run_dir, conf):
    cfg = base_config(ds, ds_dir)
    if conf["start"] == "truth":
        cfg["initial_parameters"]["values"] = [ds["truth"][n] for n in NAMES]
    for key, value in conf["settings"].items():
        rs.set_key(cfg, key, value.replace("{run}", run_dir) if isinstance(value, str) else value)
    return cfg


def run(ds, ds_dir, name, conf, tools, work, ranks, timeout):
    # CPU seconds beside the wall time: on a shared machine the wall time measures the load
    # as much as the fit (the fit's processes are waited for, so their time is the children's).
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec = rs.run_fit(ds, ds_dir, name, conf, tools, work, ranks, timeout, make_config=fit_config)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec["cpu_seconds"] = ((after.ru_utime + after.ru_stime)
                          - (before.ru_utime + before.ru_stime))
    out = os.path.join(work, "runs", ds["id"], name, "out")
    params = rs.read_json(os.path.join(out, "nlsq", "parameters.json")) or {}
    rec["sd"] = {k: v.get("uncertainty") for k, v in params.get("parameters", {}).items()}
    return rec


def soft_clip(x):
    sp = lambda z: max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    y = sp(50.0 * x) / 50.0
    return 1.0 - sp(50.0 * (1.0 - y)) / 50.0


def fraction(p, t):
    return soft_clip(p["f0"] * math.exp(max(-700.0, min(700.0, p["f1"] * (t - p["f2"]))))
                     + p["f3"])


def half_decays(p, population, ds):
    """h[i][j] of one population (ref or sample) on the dataset's grid t_m = (m + 1) dt."""
    d0, alpha, off = (p[f"D0_{population}"], p[f"alpha_{population}"],
                      p[f"D_offset_{population}"])
    ts = [DT * (m + 1) for m in range(ds["frames"])]
    rate = [max(d0 * t ** alpha + off, 0.0) for t in ts]
    prefix = [0.0]
    for a, b in zip(rate, rate[1:]):
        prefix.append(prefix[-1] + 0.5 * (a + b) * DT)
    pre = np.array(prefix)
    return np.exp(np.clip(-0.5 * Q * Q * np.abs(pre[None, :] - pre[:, None]), -700.0, 0.0))


def decay_error(ds, phys, mirrored):
    """The largest |h_fit - h_true| over the grid's pairs, per population (None if the fit
    has no finite rate parameters)."""
    out = {}
    for pop in ("ref", "sample"):
        truth_pop = ({"ref": "sample", "sample": "ref"}[pop] if mirrored else pop)
        keys = [f"D0_{pop}", f"alpha_{pop}", f"D_offset_{pop}"]
        if not all(rs.finite(phys.get(k)) for k in keys):
            out[pop] = None
            continue
        out[pop] = float(np.max(np.abs(half_decays(phys, pop, ds)
                                       - half_decays(ds["truth"], truth_pop, ds))))
    return out


MIRROR = {"D0_ref": "D0_sample", "alpha_ref": "alpha_sample", "D_offset_ref": "D_offset_sample",
          "D0_sample": "D0_ref", "alpha_sample": "alpha_ref", "D_offset_sample": "D_offset_ref"}


def judge_against(ds, phys, sd, mirrored):
    """z per parameter and the fraction curve's largest error against the truth, or against
    its label mirror (reference and sample swapped, f_s -> 1 - f_s: c2 is unchanged, the
    velocity and phi0_het stay)."""
    truth = ds["truth"]
    z = {}
    for n in NAMES:
        if n in ("f0", "f1", "f2", "f3"):
            continue
        fit, s = phys.get(n), sd.get(n)
        if not rs.finite(fit) or not rs.finite(s) or s <= 0:
            z[n] = None
            continue
        z[n] = abs(fit - truth[MIRROR.get(n, n) if mirrored else n]) / s
    err = None
    if all(rs.finite(phys.get(n)) for n in ("f0", "f1", "f2", "f3")):
        ts = [DT * (m + 1) for m in range(ds["frames"])]
        ref = [fraction(truth, t) for t in ts]
        if mirrored:
            ref = [1.0 - f for f in ref]
        err = max(abs(fraction(phys, t) - f) for t, f in zip(ts, ref))
    ok = (all(v is not None and v <= Z_MAX for v in z.values())
          and err is not None and err <= FRACTION_TOL)
    return z, err, ok


def judge_curves(ds, phys, z, err, mirrored):
    """Recovered by the second judgement: the velocity and phi0_het within Z_MAX sd, the
    fraction curve within FRACTION_TOL, each population's half decay within DECAY_TOL."""
    decay = decay_error(ds, phys, mirrored)
    ok = (all(z.get(n) is not None and z[n] <= Z_MAX for n in ("v0", "v_beta", "v_offset",
                                                                 "phi0_het"))
          and err is not None and err <= FRACTION_TOL
          and all(v is not None and v <= DECAY_TOL for v in decay.values()))
    return decay, ok


def judge(ds, rec):
    """z per parameter; the sample fraction as a curve (f0, f1, f3 are one parameter when
    f1 = 0, and f0 with f2 always): the largest |f_s,fit(t) - f_s,true(t)| on the grid.
    `recovered`: against the truth's own labels; `recovered_up_to_label`: against the truth
    or its mirror (the data cannot tell the two labellings apart when the fraction is
    constant, and barely otherwise)."""
    phys = rec.get("physical") or {}
    sd = rec.get("sd") or {}
    rec["z"], rec["fraction_error"], rec["recovered"] = judge_against(ds, phys, sd, False)
    zm, em, okm = judge_against(ds, phys, sd, True)
    rec["z_mirror"], rec["fraction_error_mirror"] = zm, em
    rec["recovered_up_to_label"] = rec["recovered"] or okm
    rec["label"] = "truth" if rec["recovered"] else ("mirror" if okm else None)
    rec["decay_error"], rec["recovered_curves"] = judge_curves(ds, phys, rec["z"],
                                                               rec["fraction_error"], False)
    rec["decay_error_mirror"], okc = judge_curves(ds, phys, zm, em, True)
    rec["recovered_curves_up_to_label"] = rec["recovered_curves"] or okc
    return rec


def table(datasets, records, configs):
    by = {(r["dataset"], r["config"]): r for r in records}
    lines = ["| configuration | χ² ≤ 1.001·ref | recovered (10 parameters within 4 sd, f_s(t) "
             "within 0.05) | recovered up to the label (truth or its mirror) | labels | "
             "`converged` above 1.01·ref with exit 0 | above 1.01·ref with a non-zero exit "
             "(stalled 4, misfit 5) | median wall s | median CPU s | recovered by the curves (both "
             "half decays within 0.05, f_s(t) within 0.05, velocity and phi0_het within 4 sd) "
             "| by the curves up to the label |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in configs:
        rs_ = [by[(d["id"], c)] for d in datasets if (d["id"], c) in by]
        reached = sum(1 for r in rs_ if r.get("chi2_ratio") is not None
                      and r["chi2_ratio"] <= REACH)
        rec = sum(1 for r in rs_ if r.get("recovered"))
        mirror = [r["dataset"] for r in rs_ if r.get("label") == "mirror"]
        rec_label = f"{rec + len(mirror)}/{len(rs_)}" + (
            f" (mirror: {', '.join(mirror)})" if mirror else "")
        labels = {}
        for r in rs_:
            labels[str(r.get("status"))] = labels.get(str(r.get("status")), 0) + 1
        lab = ", ".join(f"{k} {v}" for k, v in sorted(labels.items()))
        above = [r for r in rs_ if r.get("chi2_ratio") is not None and r["chi2_ratio"] > 1.01]
        # The acceptance's failure: a wrong answer that a script would take (exit 0).
        wrong = [r["dataset"] for r in above
                 if r.get("status") == "converged" and r.get("exit_code") == 0]
        told = [f"{r['dataset']} ({r.get('status')}, exit {r.get('exit_code')})" for r in above
                if r.get("exit_code") != 0]
        wall = np.median([r["wall_seconds"] for r in rs_]) if rs_ else float("nan")
        cpus = [r["cpu_seconds"] for r in rs_ if r.get("cpu_seconds") is not None]
        cpu = f"{np.median(cpus):.1f}" if cpus else "-"
        curves = sum(1 for r in rs_ if r.get("recovered_curves"))
        curves_label = sum(1 for r in rs_ if r.get("recovered_curves_up_to_label"))
        lines.append(f"| {c} | {reached}/{len(rs_)} | {rec}/{len(rs_)} | {rec_label} | {lab} | "
                     f"{len(wrong)}{' (' + ', '.join(wrong) + ')' if wrong else ''} | "
                     f"{len(told)}{' (' + ', '.join(told) + ')' if told else ''} | "
                     f"{wall:.1f} | {cpu} | {curves}/{len(rs_)} | {curves_label}/{len(rs_)} |")
    # Per parameter: how often the template start's fit has it within 4 sd.
    lines.append("")
    for c in configs:
        rs_ = [by[(d["id"], c)] for d in datasets if (d["id"], c) in by]
        per = []
        for n in NAMES:
            if n in ("f0", "f1", "f2", "f3"):
                continue
            ok = sum(1 for r in rs_ if r["z"].get(n) is not None and r["z"][n] <= Z_MAX)
            per.append(f"{n} {ok}")
        ok = sum(1 for r in rs_ if r.get("fraction_error") is not None
                 and r["fraction_error"] <= FRACTION_TOL)
        per.append(f"f_s(t) {ok}")
        lines.append(f"{c}, within tolerance (of {len(rs_)}): " + ", ".join(per))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin-dir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--ids", help="comma-separated dataset indices to run, in this order "
                    "(default: 0 .. --datasets - 1); the draws are the same as in the full study")
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--draws", choices=["narrow", "broad"], default="narrow",
                    help="narrow: the first study's draws; broad: the beamline spread "
                    "(draw_dataset_broad)")
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--configs", default="truth,template")
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--work-dir")
    ap.add_argument("--mpiexec", default="mpiexec")
    ap.add_argument("--rejudge", help="run nothing: judge the runs of an earlier "
                    "two_component_recovery.json again and rewrite it and its table in --out")
    args = ap.parse_args()
    if args.rejudge:
        with open(args.rejudge) as f:
            doc = json.load(f)
        for r in doc["runs"]:
            judge(next(d for d in doc["datasets"] if d["id"] == r["dataset"]), r)
        configs = list(doc["configurations"])
        text = table(doc["datasets"], doc["runs"], configs)
        doc["z_max"], doc["fraction_tol"], doc["decay_tol"] = Z_MAX, FRACTION_TOL, DECAY_TOL
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "two_component_recovery.json"), "w") as f:
            json.dump(doc, f, indent=1)
        with open(os.path.join(args.out, "two_component_recovery.md"), "w") as f:
            f.write(text)
        rs.draw_figure(os.path.join(args.out, "two_component_recovery.png"), doc["datasets"],
                       doc["runs"], configs, set())
        rs.log(text)
        return
    if not args.bin_dir:
        ap.error("--bin-dir is required (unless --rejudge)")
    confs = dict(CONFIGS)
    configs = [c for c in args.configs.split(",") if c]
    for v in args.variant:
        name, conf = rs.parse_variant(v)
        confs[name] = conf
        configs.append(name)
    tools = {"homodyne": os.path.join(args.bin_dir, "homodyne"),
             "synth": os.path.join(args.bin_dir, "homodyne-synth"),
             "mpiexec": shutil.which(args.mpiexec)}
    if not tools["mpiexec"]:
        raise SystemExit(f"error: {args.mpiexec} not found on PATH")
    for k in ("homodyne", "synth"):
        if not os.access(tools[k], os.X_OK):
            raise SystemExit(f"error: {tools[k]} not found (build first)")
    os.makedirs(args.out, exist_ok=True)
    work = args.work_dir or tempfile.mkdtemp(prefix="homodyne_tc_recovery_")
    started = datetime.datetime.now(datetime.timezone.utc)
    git = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                          "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    draw = draw_dataset_broad if args.draws == "broad" else draw_dataset
    indices = ([int(i) for i in args.ids.split(",") if i.strip()] if args.ids
               else list(range(args.datasets)))
    datasets = [draw(args.seed, i) for i in indices]
    records = []
    for i, ds in enumerate(datasets):
        ds_dir = os.path.join(work, "datasets", ds["id"])
        rs.generate_dataset(ds, ds_dir, tools["synth"], make_base=base_config)
        line = []
        for c in configs:
            rec = run(ds, ds_dir, c, confs[c], tools, work, args.ranks, args.timeout)
            records.append(rec)
            chi = rec.get("chi2")
            line.append(f"{c} {rec.get('status')} {chi:.6g}" if rs.finite(chi)
                        else f"{c} {rec.get('status')} -")
        rs.log(f"[{i + 1}/{len(datasets)}] {ds['id']} {ds['fraction']:<8} "
               f"{len(ds['angles'])} angles x {ds['frames']} frames: " + "; ".join(line))
        # The files after every dataset, so an interrupted study keeps what it measured (its
        # JSON says how many of the planned datasets are in it).
        write_outputs(args, datasets[:i + 1], len(datasets), records, configs, confs, started,
                      git, figure=(i + 1 == len(datasets)))


def write_outputs(args, datasets, planned, records, configs, confs, started, git, figure):
    for ds in datasets:
        chis = [r["chi2"] for r in records if r["dataset"] == ds["id"] and rs.finite(r.get("chi2"))]
        ds["reference_chi2"] = min(chis) if chis else None
        for r in records:
            if r["dataset"] != ds["id"]:
                continue
            ref = ds["reference_chi2"]
            r["chi2_ratio"] = r["chi2"] / ref if rs.finite(r.get("chi2")) and ref else None
            judge(ds, r)
    text = table(datasets, records, configs)
    doc = {"study": "two-component NLSQ recovery (docs/model.md)",
           "started_utc": started.isoformat(timespec="seconds"), "git": git,
           "command": " ".join(sys.argv), "seed": args.seed, "ranks": args.ranks,
           "z_max": Z_MAX, "fraction_tol": FRACTION_TOL, "decay_tol": DECAY_TOL, "reach": REACH, "configurations": {c: confs[c] for c in configs},
           "datasets_planned": planned, "datasets": datasets, "runs": records}
    with open(os.path.join(args.out, "two_component_recovery.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, "two_component_recovery.md"), "w") as f:
        f.write(text)
    if figure:
        rs.draw_figure(os.path.join(args.out, "two_component_recovery.png"), datasets, records,
                       configs, set())
        rs.log("")
        rs.log(text)


if __name__ == "__main__":
    main()
