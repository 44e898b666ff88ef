#!/usr/bin/env python3
"""homodyne-hpc's CMC NUTS against Stan's on the same shard posteriors, set up as a Stan
developer would ask: three Stan rows per shard and ours, several seeds each.

Rows (every one: dense metric, 2 chains x (500 warmup + 1000 draws), target acceptance 0.8,
maximum tree depth 10, sigma known):
  stan_user       homodyne_static_shard.stan, the model as a user writes it (bounded
                  parameters through Stan's logit maps), chains started at the truth;
  stan_unitscale  homodyne_static_shard_unitscale.stan: every parameter on unit scale,
                  theta = m + s * z (m the shard's mode, s its NLSQ standard error: the
                  Laplace covariance's marginal sd), started at z = 0;
  stan_whitened   homodyne_static_shard_whitened.stan: the coordinates homodyne's CMC
                  samples (its sampling geometry and its Laplace map u = centre + L z),
                  started at z = 0 (the mode);
  ours            homodyne --method cmc in its default coordinates, chains started at the
                  truth (moved to the shard's mode before warmup, docs/cmc.md step 5b).
The map is exported by homodyne (HOMODYNE_CMC_MAP_DIR, src/cmc/shard_map_export.h) in every
run of ours; its CPU time (mode search and Hessian) is work of every row that uses it.

Counted per run: bulk and tail ESS (min over the parameters; ess.py for every tool) and
R-hat; the gradients of warmup and sampling (Stan: n_leapfrog; ours: the run's shard
diagnostics) and the map's cost in gradient equivalents (its CPU seconds over our CPU
seconds per gradient); CPU seconds of the whole process (getrusage of the child: Stan's R
process with its forked chains, the model loaded from the cache, never compiled in a timed
run; ours: mpiexec and homodyne), plus the map's CPU for the Stan rows that use it; CPU ms
per gradient (Stan: its chains' own clock; ours: the whole process minus the map, over the
sampler's gradients, an upper bound).

  stan_bench.py --build BUILD --out DIR [--shards a,b] [--rows stan_user,...,ours]
                [--seeds 1,2,3,4,5] [--stan auto|yes|no] [--report-only]

Runs already in OUT/stan_bench.json (same shard, row and seed) are kept, so a long study
can be resumed or extended shard by shard and row by row.

Shards: a = static, 2 angles x 60 frames (3,422 points); b = static, 4 angles x 150 frames
(44,104 points). Truth D0 2400, alpha -0.6, D_offset 20, contrast 0.2, offset 1.0,
q 0.007, dt 0.05, noise sd 2e-3.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import ess as ESS  # noqa: E402
from peers_common import cpu_model  # noqa: E402

STATIC_TRUTH = {"D0": 2400.0, "alpha": -0.6, "D_offset": 20.0}
CONTRAST, OFFSET, SIGMA, Q, DT = 0.2, 1.0, 2e-3, 0.007, 0.05
# Truncated-normal priors (mu, sd, lower, upper): make_stan_data.py's defaults.
PRIORS = {"D0": (2000.0, 2000.0, 100.0, 1e5), "alpha": (0.0, 1.0, -2.0, 2.0),
          "D_offset": (0.0, 100.0, -1e5, 1e5), "contrast": (0.25, 0.1, 0.0, 1.0),
          "offset": (1.0, 0.1, 0.5, 1.5)}
SHARDS = {
    "a": {"angles": [0.0, 90.0], "frames": 60, "seed": 11},
    "b": {"angles": [0.0, 45.0, 90.0, 135.0], "frames": 150, "seed": 12},
}
ROWS = ["stan_user", "stan_unitscale", "stan_whitened", "ours"]
STAN_MODELS = {"stan_user": "homodyne_static_shard.stan",
               "stan_unitscale": "homodyne_static_shard_unitscale.stan",
               "stan_whitened": "homodyne_static_shard_whitened.stan"}
CHAINS, WARMUP, SAMPLING = 2, 500, 1000


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def timed(cmd, env=None):
    """Runs cmd; returns (process, wall s, CPU s of the child and its waited-for children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run(cmd, text=True, capture_output=True, env=env)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, wall, cpu


def yaml_dump(obj, indent=0):
    """A small YAML writer (the configs are plain nested mappings, lists and scalars)."""
    pad = "  " * indent
    out = []
    for k, v in obj.items():
        if isinstance(v, dict):
            out.append(f"{pad}{k}:")
            out.append(yaml_dump(v, indent + 1))
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            out.append(f"{pad}{k}:")
            for item in v:
                first = True
                for ik, iv in item.items():
                    out.append(f"{pad}  {'- ' if first else '  '}{ik}: {json.dumps(iv)}")
                    first = False
        else:
            out.append(f"{pad}{k}: {json.dumps(v)}")
    return "\n".join(out)


def base_config(shard, data_dir, data_file, seed):
    s = SHARDS[shard]
    n = len(s["angles"])
    names = list(STATIC_TRUTH)
    return {
        "analysis_mode": "static",
        "analyzer_parameters": {"dt": DT, "start_frame": 1, "end_frame": s["frames"],
                                "scattering": {"wavevector_q": Q},
                                "geometry": {"stator_rotor_gap": 2000000}},
        "experimental_data": {"data_folder_path": data_dir, "data_file_name": data_file},
        "phi_filtering": {"enabled": False},
        "initial_parameters": {"parameter_names": names,
                               "values": [STATIC_TRUTH[k] for k in names],
                               "per_angle_scaling": {"contrast": [CONTRAST] * n,
                                                     "offset": [OFFSET] * n}},
        "parameter_space": {"bounds": [
            {"name": k, "min": PRIORS[k][2], "max": PRIORS[k][3], "type": "TruncatedNormal",
             "prior_mu": PRIORS[k][0], "prior_sigma": PRIORS[k][1]} for k in PRIORS]},
        "output": {"fitted_data": "none"},
        "optimization": {
            "mcmc": {"dense_mass_matrix": True},
            "cmc": {"enable": True, "per_angle_mode": "individual", "prior_tempering": False,
                    "known_sigma": SIGMA, "seed": seed, "sharding": {"num_shards": 1},
                    "per_shard_mcmc": {"num_warmup": WARMUP, "num_samples": SAMPLING,
                                       "num_chains": CHAINS, "target_accept_prob": 0.8,
                                       "max_tree_depth": 10},
                    "validation": {"use_nlsq_informed_priors": False},
                    "backend_config": {"enable_checkpoints": False}}},
    }


def make_shard(build, work, shard):
    s = SHARDS[shard]
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, f"shard_{shard}.h5")
    cfg_path = os.path.join(work, f"shard_{shard}.yaml")
    open(cfg_path, "w").write(yaml_dump(base_config(shard, work, os.path.basename(data), 1))
                              + "\n")
    if not os.path.exists(data):
        cmd = [os.path.join(build, "apps", "homodyne-synth"), "--config", cfg_path, "-o", data,
               "--frames", str(s["frames"]), "--angles", ",".join(str(a) for a in s["angles"]),
               "--contrast", str(CONTRAST), "--offset", str(OFFSET), "--noise", str(SIGMA),
               "--seed", str(s["seed"]), "--quiet"]
        for k, v in STATIC_TRUTH.items():
            cmd += ["--param", f"{k}={v}"]
        sh(cmd)
        n = len(s["angles"])
        json.dump({"truth": {**STATIC_TRUTH, "contrast": [CONTRAST] * n, "offset": [OFFSET] * n},
                   "params": STATIC_TRUTH, "contrast": [CONTRAST] * n, "offset": [OFFSET] * n,
                   "frames": s["frames"], "seed": s["seed"]},
                  open(data[:-3] + ".truth.json", "w"))
    return cfg_path, data


# ------------------------------------------------------------------------------ ESS
def ess_table(x, names, n_chains):
    n = x.shape[0] // n_chains
    res = {}
    for j, nm in enumerate(names):
        if nm == "lp__":
            continue
        s = x[:, j].reshape(n_chains, n).T
        eb = float(ESS.ess_bulk(s))
        res[nm] = {"mean": float(s.mean()), "sd": float(s.std(ddof=1)), "ess_bulk": eb,
                   "ess_tail": float(ESS.ess_tail(s)), "rhat": float(ESS.rhat(s)),
                   # Monte Carlo standard error of the mean from the bulk ESS.
                   "mcse_mean": float(s.std(ddof=1) / np.sqrt(max(eb, 1.0)))}
    return res


def ess_of_samples(path, n_chains):
    import h5py
    with h5py.File(path, "r") as f:
        x = f["/shards/shard_00000"][()]
        names = f.attrs["param_names"]
        names = (names.decode() if isinstance(names, bytes) else str(names)).split(",")
    return ess_table(x, names, n_chains)


def ess_of_stan_csv(path, n_chains):
    rows = np.loadtxt(path, delimiter=",", skiprows=1)
    header = open(path).readline().strip().replace('"', "").split(",")
    names = []
    for nm in header:
        if "." in nm:  # as.data.frame writes contrast[1] as contrast.1
            b, k = nm.split(".")
            nm = f"{b}_{int(k) - 1}"
        elif "[" in nm:
            b, k = nm.rstrip("]").split("[")
            nm = f"{b}_{int(k) - 1}"
        names.append(nm)
    return ess_table(rows, names, n_chains)


# ------------------------------------------------------------------------------ ours
def run_ours(build, work, shard, seed, mpiexec):
    tag = f"ours_{shard}_s{seed}"
    cfg_path = os.path.join(work, tag + ".yaml")
    data = os.path.join(work, f"shard_{shard}.h5")
    open(cfg_path, "w").write(yaml_dump(base_config(shard, work, os.path.basename(data), seed))
                              + "\n")
    out = os.path.join(work, tag)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, HOMODYNE_CMC_MAP_DIR=out)
    cmd = mpiexec + ["-x", "HOMODYNE_CMC_MAP_DIR", os.path.join(build, "apps", "homodyne"),
                     "--config", cfg_path, "--method", "cmc", "--no-nlsq-warmstart",
                     "--threads", "2", "--output-dir", out, "-q"]
    proc, wall, cpu = timed(cmd, env)
    if proc.returncode != 0:
        raise SystemExit(f"{tag}: homodyne exit {proc.returncode}\n{proc.stderr[-3000:]}")
    sh_diag = json.load(open(os.path.join(out, "cmc", "shard_diagnostics.json")))
    d = sh_diag[0] if isinstance(sh_diag, list) else sh_diag["shards"][0]
    smap = json.load(open(os.path.join(out, "shard_map_0.json")))
    hist = d.get("tree_depth_histogram", [])
    draws = sum(hist) if hist else 1
    warm, samp = d["warmup_gradient_evaluations"], d["gradient_evaluations"]
    map_cpu = smap["mode_search_cpu_seconds"]
    ms_per_grad = 1e3 * (cpu - map_cpu) / (warm + samp)
    return {"tool": "homodyne-hpc", "row": "ours", "shard": shard, "seed": seed,
            "cpu_seconds": cpu, "wall_seconds": wall, "map_cpu_seconds": map_cpu,
            "ess": ess_of_samples(os.path.join(out, "cmc", "samples.h5"), CHAINS),
            "warmup_gradients": warm, "sampling_gradients": samp,
            "map_gradient_equivalents": 1e3 * map_cpu / ms_per_grad,
            "ms_per_gradient": ms_per_grad,
            "ms_per_gradient_note": "whole process minus the map, over warmup + sampling "
                                    "gradients (an upper bound: start-up and I/O included)",
            "mode_search_iterations": smap["mode"]["iterations"],
            "mode_converged": smap["mode"]["converged"],
            "mean_tree_depth": sum(i * c for i, c in enumerate(hist)) / draws,
            "cap_share": hist[-1] / draws if hist else float("nan"),
            "step_size": d.get("step_size_mean"), "divergences": d.get("divergences"),
            "acceptance": d.get("acceptance_rate")}, smap


# ------------------------------------------------------------------------------ the map
def u_to_theta(u, names, smap):
    """homodyne's coordinates u (before the whitening) -> theta, for the static geometry
    (log D0; log contrast_k and offset_k + contrast_k; alpha, D_offset logistic)."""
    lo, hi = smap["site_lower"], smap["site_upper"]
    th = {}
    for i, nm in enumerate(names):
        if nm == "D0":
            th[nm] = np.exp(u[i])
        elif nm.startswith("contrast"):
            th[nm] = np.exp(u[i])
        elif nm in ("alpha", "D_offset"):
            th[nm] = lo[i] + (hi[i] - lo[i]) / (1.0 + np.exp(-u[i]))
    for i, nm in enumerate(names):
        if nm.startswith("offset"):
            th[nm] = u[i] - th["contrast" + nm[len("offset"):]]
    return np.array([th[nm] for nm in names])


def map_data(smap, n_phi):
    """Stan's extra data for the whitened and unit-scale models from homodyne's map; checks
    that the map's coordinates are the ones the whitened model implements."""
    names = smap["names"]
    geo = smap["geometry"]
    if smap.get("whitening") is None:
        raise SystemExit("the shard map has no whitening (Hessian not positive definite)")
    if smap["reparameterization_active"]:
        raise SystemExit(f"unexpected reparameterisation in the shard map ({geo})")
    u0 = np.array(smap["mode"]["u"])
    theta0 = np.array(smap["mode"]["theta"])
    if not np.allclose(u_to_theta(u0, names, smap), theta0, rtol=1e-10, atol=1e-12):
        raise SystemExit(f"the shard map's coordinates are not the whitened model's: {geo}")
    d = len(names)
    centre = np.array(smap["whitening"]["centre"])
    chol = np.array(smap["whitening"]["chol"]).reshape(d, d)
    # theta's Laplace covariance J L L^T J^T, J = d theta / d u by central differences.
    jac = np.zeros((d, d))
    for k in range(d):
        h = 1e-6 * max(1.0, abs(centre[k]))
        e = np.zeros(d)
        e[k] = h
        jac[:, k] = (u_to_theta(centre + e, names, smap) - u_to_theta(centre - e, names, smap)) / (2 * h)
    sd = np.sqrt(np.diag(jac @ chol @ chol.T @ jac.T))
    stan_order = ["D0", "alpha", "D_offset"] + [f"contrast_{k}" for k in range(n_phi)] \
        + [f"offset_{k}" for k in range(n_phi)]
    idx = {nm: names.index(nm) for nm in stan_order}
    ix = [idx[nm] + 1 for nm in stan_order]  # Stan is 1-based
    whitened = {"d": d, "centre": centre.tolist(), "chol": chol.tolist(),
                "i_D0": ix[0], "i_alpha": ix[1], "i_D_offset": ix[2],
                "i_c": ix[3:3 + n_phi], "i_o": ix[3 + n_phi:]}
    unitscale = {"d": d, "ref_value": [float(theta0[i - 1]) for i in ix],
                 "ref_scale": [float(sd[i - 1]) for i in ix]}
    return whitened, unitscale


# ------------------------------------------------------------------------------ Stan
def stan_available():
    if shutil.which("Rscript") is None:
        return False, "Rscript not found"
    p = subprocess.run(["Rscript", "-e", "suppressPackageStartupMessages(library(rstan))"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return False, "R package rstan not installed"
    return True, ""


def stan_data(work, shard, cfg_path):
    sdata = os.path.join(work, f"shard_{shard}.data.json")
    if not os.path.exists(sdata):
        sh([sys.executable, os.path.join(HERE, "make_stan_data.py"), cfg_path, sdata,
            "--sigma", str(SIGMA)])
        # run_stan.R reads the truth (the user row's start) beside its data file.
        assert os.path.exists(sdata.replace(".data.json", ".truth.json"))
    return sdata


def stan_args(work, sdata, row, extra):
    args = [f"--data={sdata}", f"--chains={CHAINS}", "--cores=2", "--metric=dense_e",
            "--adapt-delta=0.8", f"--warmup={WARMUP}", f"--sampling={SAMPLING}",
            f"--model={STAN_MODELS[row]}", f"--cache-dir={os.path.join(work, 'stan_cache')}"]
    if extra is not None:
        args += [f"--extra-data={extra}", "--init=zero"]
    else:
        args += ["--init=truth"]
    return args


def compile_stan(work, sdata, row, extra):
    """Compiles the model (or finds it in the cache); then, timed, the same call again: R,
    rstan, the data and the cached model without sampling (Stan's fixed cost per process)."""
    cmd = ["Rscript", os.path.join(HERE, "run_stan.R"), "--compile-only=1"] \
        + stan_args(work, sdata, row, extra)
    sh(cmd)
    proc, _, cpu = timed(cmd)
    return cpu if proc.returncode == 0 else None


def run_stan(work, shard, sdata, row, seed, extra, smap, ms_per_grad_ours):
    tag = f"{row}_{shard}_s{seed}"
    out = os.path.join(work, tag + ".json")
    draws = os.path.join(work, tag + ".csv")
    cmd = ["Rscript", os.path.join(HERE, "run_stan.R")] + stan_args(work, sdata, row, extra) \
        + [f"--seed={seed}", f"--out={out}", f"--save-draws={draws}"]
    proc, wall, cpu = timed(cmd)
    if proc.returncode != 0:
        raise SystemExit(f"{tag}: Rscript exit {proc.returncode}\n{proc.stderr[-3000:]}")
    r = json.load(open(out))
    if r["model"]["compiled_from_cache"] is not True:
        raise SystemExit(f"{tag}: the model was compiled in a timed run")
    summ = r["summary"]
    hist = [summ["treedepth_hist"][str(i)] for i in range(0, 11)]
    chain_cpu = r["timing"]["warmup_chain_s_total"] + r["timing"]["sampling_chain_s_total"]
    grads = summ["grad_evals_warmup"] + summ["grad_evals_sampling"]
    uses_map = extra is not None
    map_cpu = smap["mode_search_cpu_seconds"] if uses_map else 0.0
    return {"tool": "Stan", "row": row, "shard": shard, "seed": seed,
            "rstan": r["software"]["rstan"],
            "cpu_seconds": cpu + map_cpu, "process_cpu_seconds": cpu,
            "chain_cpu_seconds": chain_cpu, "wall_seconds": wall, "map_cpu_seconds": map_cpu,
            "ess": ess_of_stan_csv(draws, CHAINS),
            "warmup_gradients": summ["grad_evals_warmup"],
            "sampling_gradients": summ["grad_evals_sampling"],
            "map_gradient_equivalents": 1e3 * map_cpu / ms_per_grad_ours if uses_map else 0.0,
            "ms_per_gradient": 1e3 * chain_cpu / grads,
            "ms_per_gradient_note": "the chains' own CPU clock over warmup + sampling gradients",
            "mean_tree_depth": summ["mean_treedepth"], "cap_share": hist[10] / sum(hist),
            "step_size": float(np.mean([a["stepsize"] for a in r["adaptation"]])),
            "divergences": summ["divergences"], "acceptance": summ["mean_accept_stat"]}


# ------------------------------------------------------------------------------ summary
def headline(run):
    e = run["ess"]
    run["min_ess_bulk"] = min(v["ess_bulk"] for v in e.values())
    run["min_ess_tail"] = min(v["ess_tail"] for v in e.values())
    run["max_rhat"] = max(v["rhat"] for v in e.values())
    run["sampler_gradients"] = run["warmup_gradients"] + run["sampling_gradients"]
    run["all_gradients"] = run["sampler_gradients"] + run["map_gradient_equivalents"]
    for kind in ("bulk", "tail"):
        ess = run[f"min_ess_{kind}"]
        run[f"{kind}_per_1k_gradients"] = 1e3 * ess / run["all_gradients"]
        run[f"{kind}_per_1k_sampling_gradients"] = 1e3 * ess / max(run["sampling_gradients"], 1)
        run[f"{kind}_per_cpu_second"] = ess / run["cpu_seconds"]
        if "chain_cpu_seconds" in run:  # Stan: its chains' own clock (+ the map) only
            run[f"{kind}_per_chain_cpu_second"] = ess / (run["chain_cpu_seconds"]
                                                         + run["map_cpu_seconds"])
    return run


METRICS = ["min_ess_bulk", "min_ess_tail", "max_rhat", "cpu_seconds", "chain_cpu_seconds",
           "all_gradients",
           "bulk_per_1k_gradients", "tail_per_1k_gradients", "bulk_per_cpu_second",
           "tail_per_cpu_second", "bulk_per_chain_cpu_second", "tail_per_chain_cpu_second",
           "ms_per_gradient", "mean_tree_depth", "cap_share",
           "step_size", "map_gradient_equivalents"]


def spread(values):
    v = [x for x in values if x is not None and np.isfinite(x)]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def aggregate(runs):
    groups = {}
    for r in runs:
        groups.setdefault((r["shard"], r["row"]), []).append(r)
    out = []
    for (shard, row), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], ROWS.index(kv[0][1]))):
        out.append({"shard": shard, "row": row, "seeds": sorted(r["seed"] for r in rs),
                    **{m: spread([r.get(m) for r in rs]) for m in METRICS}})
    return out


def ratios(agg):
    """Ours against each Stan row of the same shard: the medians' ratios, and the ratios of
    the worst of ours to the best of Stan's seeds (the spreads' far ends)."""
    out = []
    for ours in (a for a in agg if a["row"] == "ours"):
        for st in (a for a in agg if a["shard"] == ours["shard"] and a["row"] != "ours"):
            rec = {"shard": ours["shard"], "against": st["row"], "stan_seeds": len(st["seeds"])}
            for m in ("bulk_per_1k_gradients", "tail_per_1k_gradients", "bulk_per_cpu_second",
                      "tail_per_cpu_second"):
                rec[m] = {"median_ratio": ours[m]["median"] / st[m]["median"],
                          "worst_ratio": ours[m]["min"] / st[m]["max"]}
            # Against Stan's chains alone (R, rstan and the output left out of Stan's side
            # only): the ratio least favourable to ours.
            for kind in ("bulk", "tail"):
                rec[f"{kind}_per_cpu_second_vs_chains"] = {
                    "median_ratio": ours[f"{kind}_per_cpu_second"]["median"]
                    / st[f"{kind}_per_chain_cpu_second"]["median"]}
            out.append(rec)
    return out


def compare_posteriors(runs):
    """Every run's means and sds against the pooled Stan user-row runs of its shard (the
    whitened row's where the user row was not run): means within 3 combined Monte Carlo
    standard errors, sds within 10 %."""
    out = []
    for shard in sorted({r["shard"] for r in runs}):
        for ref_row in ("stan_user", "stan_whitened"):
            ref = [r for r in runs if r["shard"] == shard and r["row"] == ref_row]
            if ref:
                break
        if not ref:
            continue
        for r in (x for x in runs if x["shard"] == shard and x["row"] != ref_row):
            worst_z, worst_sd = 0.0, 1.0
            for nm in ref[0]["ess"]:
                if nm not in r["ess"]:
                    continue
                rm = np.mean([x["ess"][nm]["mean"] for x in ref])
                rse = np.sqrt(np.sum([x["ess"][nm]["mcse_mean"] ** 2 for x in ref])) / len(ref)
                rsd = np.mean([x["ess"][nm]["sd"] for x in ref])
                h = r["ess"][nm]
                z = (h["mean"] - rm) / np.hypot(h["mcse_mean"], rse)
                worst_z = z if abs(z) > abs(worst_z) else worst_z
                q = h["sd"] / rsd
                worst_sd = q if abs(q - 1) > abs(worst_sd - 1) else worst_sd
            out.append({"shard": shard, "row": r["row"], "seed": r["seed"], "reference": ref_row,
                        "worst_mean_z": float(worst_z), "worst_sd_ratio": float(worst_sd),
                        "agrees": bool(abs(worst_z) <= 3 and abs(worst_sd - 1) <= 0.10)})
    return out


def fmt_spread(s, f="{:.3g}", pct=False):
    if s is None:
        return "–"
    k = 100.0 if pct else 1.0
    if s["n"] == 1:
        return f.format(k * s["median"]) + " (1 seed)"
    return f"{f.format(k * s['median'])} ({f.format(k * s['min'])}–{f.format(k * s['max'])})"


def markdown(result):
    agg = result["aggregate"]
    lines = ["Medians over seeds, (min–max) in brackets. Gradients: warmup + sampling + the map's "
             "gradient equivalents; CPU s: the whole process (+ the map's CPU for the Stan rows "
             "that use it).", "",
             "| shard | row | seeds | min bulk ESS | min tail ESS | max R̂ | gradients | CPU s "
             "| Stan's chains' CPU s "
             "| bulk ESS / 1k grad | tail ESS / 1k grad | bulk ESS / CPU-s | tail ESS / CPU-s "
             "| ms / gradient | tree depth | depth-10 share |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for a in agg:
        lines.append(
            f"| {a['shard']} | {a['row']} | {len(a['seeds'])} | {fmt_spread(a['min_ess_bulk'], '{:.0f}')} "
            f"| {fmt_spread(a['min_ess_tail'], '{:.0f}')} | {fmt_spread(a['max_rhat'], '{:.3f}')} "
            f"| {fmt_spread(a['all_gradients'], '{:.3g}')} | {fmt_spread(a['cpu_seconds'], '{:.3g}')} "
            f"| {fmt_spread(a['chain_cpu_seconds'], '{:.3g}')} "
            f"| {fmt_spread(a['bulk_per_1k_gradients'])} | {fmt_spread(a['tail_per_1k_gradients'])} "
            f"| {fmt_spread(a['bulk_per_cpu_second'])} | {fmt_spread(a['tail_per_cpu_second'])} "
            f"| {fmt_spread(a['ms_per_gradient'])} | {fmt_spread(a['mean_tree_depth'], '{:.2f}')} "
            f"| {fmt_spread(a['cap_share'], '{:.1f}', pct=True)} % |")
    if result["ratios"]:
        lines += ["", "Ours against each Stan row: ratio of medians (worst of ours over best of "
                  "Stan's seeds in brackets).", "",
                  "| shard | against | ESS/gradient, bulk | ESS/gradient, tail | ESS/CPU-s, bulk "
                  "| ESS/CPU-s, tail | ESS/CPU-s against Stan's chains alone, bulk / tail |",
                  "|---|---|---|---|---|---|---|"]
        for r in result["ratios"]:
            cells = [f"{r[m]['median_ratio']:.3g}× ({r[m]['worst_ratio']:.3g}×)"
                     for m in ("bulk_per_1k_gradients", "tail_per_1k_gradients",
                               "bulk_per_cpu_second", "tail_per_cpu_second")]
            cells.append(f"{r['bulk_per_cpu_second_vs_chains']['median_ratio']:.3g}× / "
                         f"{r['tail_per_cpu_second_vs_chains']['median_ratio']:.3g}×")
            lines.append(f"| {r['shard']} | {r['against']} | " + " | ".join(cells) + " |")
    if result["posterior_check"]:
        bad = [p for p in result["posterior_check"] if not p["agrees"]]
        refs = sorted({(p["shard"], p["reference"]) for p in result["posterior_check"]})
        lines += ["", "Posterior check against the pooled runs of the reference row ("
                  + ", ".join(f"shard {sh}: {rr}" for sh, rr in refs)
                  + "; means within 3 combined MCSE, sds within 10 %): "
                  f"{len(result['posterior_check']) - len(bad)} of "
                  f"{len(result['posterior_check'])} runs agree."]
        for p in bad:
            lines.append(f"* {p['shard']} {p['row']} seed {p['seed']}: worst mean z "
                         f"{p['worst_mean_z']:+.2f}, worst sd ratio {p['worst_sd_ratio']:.3f}")
    if result.get("stan_skipped"):
        lines += ["", f"Stan skipped: {result['stan_skipped']}"]
    return "\n".join(lines) + "\n"


def write_report(result, out):
    for r in result["runs"]:
        headline(r)
    result["aggregate"] = aggregate(result["runs"])
    result["ratios"] = ratios(result["aggregate"])
    result["posterior_check"] = compare_posteriors(result["runs"])
    path = os.path.join(out, "stan_bench.json")
    text = json.dumps(result, indent=1)  # fails before the file is touched
    open(path + ".tmp", "w").write(text)
    os.replace(path + ".tmp", path)
    open(os.path.join(out, "stan_bench.md"), "w").write(markdown(result))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None, help="data and run folder (default OUT/work)")
    ap.add_argument("--shards", default="a,b")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--stan", choices=["auto", "yes", "no"], default="auto")
    ap.add_argument("--report-only", action="store_true",
                    help="recompute the summaries and the table of OUT/stan_bench.json")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out)
    path = os.path.join(out, "stan_bench.json")
    if a.report_only:
        result = json.load(open(path))
        write_report(result, out)
        print(markdown(result))
        return
    work = os.path.abspath(a.work or os.path.join(out, "work"))
    os.makedirs(work, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    mpiexec = ["mpiexec", "-n", "1", "--map-by", "slot:PE=2", "--bind-to", "core"]
    rows = a.rows.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    have_stan, why = stan_available() if a.stan != "no" else (False, "--stan no")
    if a.stan == "yes" and not have_stan:
        raise SystemExit(f"Stan requested but unavailable: {why}")
    if not have_stan and any(r != "ours" for r in rows):
        print(f"Stan skipped: {why} (Debian: apt-get install -y r-cran-rstan r-cran-jsonlite)",
              file=sys.stderr)
    result = json.load(open(path)) if os.path.exists(path) else {
        "benchmark": "NUTS on one CMC shard: homodyne-hpc and Stan (rstan), three Stan rows",
        "runs": []}
    result.update({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                   "machine": {"host": platform.node(), "cpu": cpu_model(),
                               "cpus": os.cpu_count(), "load_at_start": os.getloadavg()},
                   "settings": {"chains": CHAINS, "warmup": WARMUP, "sampling": SAMPLING,
                                "adapt_delta": 0.8, "max_tree_depth": 10, "metric": "dense",
                                "sigma": SIGMA},
                   "stan_skipped": None if have_stan else why})

    def done(shard, row, seed):
        return any(r["shard"] == shard and r["row"] == row and r["seed"] == seed
                   for r in result["runs"])

    def save():
        write_report(result, out)

    for shard in a.shards.split(","):
        cfg_path, _ = make_shard(build, work, shard)
        n_phi = len(SHARDS[shard]["angles"])
        # Ours first: every run exports the map the Stan rows need.
        smap, ms_ours = None, None
        for seed in seeds:
            if "ours" in rows and not done(shard, "ours", seed):
                print(f"[ours] shard {shard} seed {seed} ...", file=sys.stderr, flush=True)
                run, smap = run_ours(build, work, shard, seed, mpiexec)
                result["runs"].append(headline(run))
                save()
        mine = [r for r in result["runs"] if r["shard"] == shard and r["row"] == "ours"]
        if smap is None:
            if not mine and any(r != "ours" for r in rows):
                run, smap = run_ours(build, work, shard, seeds[0], mpiexec)
                ms_ours = run["ms_per_gradient"]
            elif mine:
                kept = os.path.join(work, f"ours_{shard}_s{mine[0]['seed']}", "shard_map_0.json")
                if os.path.exists(kept):
                    smap = json.load(open(kept))
                else:  # a fresh work folder: the map again (the run itself is already counted)
                    _, smap = run_ours(build, work, shard, mine[0]["seed"], mpiexec)
        if mine:
            ms_ours = statistics.median(r["ms_per_gradient"] for r in mine)
        if not have_stan:
            continue
        sdata = stan_data(work, shard, cfg_path)
        whitened, unitscale = map_data(smap, n_phi)
        extras = {"stan_user": None}
        for row, data in (("stan_unitscale", unitscale), ("stan_whitened", whitened)):
            extras[row] = os.path.join(work, f"{row}_{shard}.map.json")
            json.dump(data, open(extras[row], "w"))
        for row in (r for r in ROWS if r in rows and r != "ours"):
            fixed = compile_stan(work, sdata, row, extras[row])
            result.setdefault("stan_fixed_cpu_seconds", {}).setdefault(f"{shard}/{row}", []).append(fixed)
            for seed in seeds:
                if done(shard, row, seed):
                    continue
                print(f"[{row}] shard {shard} seed {seed} ...", file=sys.stderr, flush=True)
                run = headline(run_stan(work, shard, sdata, row, seed, extras[row], smap,
                                        ms_ours))
                result["runs"].append(run)
                print(f"  bulk {run['min_ess_bulk']:.0f} tail {run['min_ess_tail']:.0f} "
                      f"cpu {run['cpu_seconds']:.1f} s grads {run['all_gradients']:.0f}",
                      file=sys.stderr, flush=True)
                save()
    save()
    print(markdown(result))


if __name__ == "__main__":
    main()
