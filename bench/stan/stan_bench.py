#!/usr/bin/env python3
"""homodyne-hpc's NUTS against Stan's on the same CMC shard posteriors, side by side.

Writes the synthetic shards, runs homodyne-hpc (`--method cmc`, one shard, the Stan model's
priors, sigma fixed) and, where rstan is installed, Stan (run_stan.R), computes every tool's
bulk/tail ESS and R-hat with one estimator (ess.py), and writes stan_bench.json and
stan_bench.md into the output directory.

  stan_bench.py --build BUILD --out DIR [--shards a,b,lam] [--metrics dense,diag]
                [--stan auto|yes|no] [--variants default,...] [--reps 1]

Shards: a = static, 2 angles x 60 frames (3,422 points); b = static, 4 angles x 150 frames
(44,104 points); lam = laminar_flow, the demo's geometry (8 angles x 40 frames,
auto layout = one averaged contrast/offset, reparameterised), homodyne-hpc only.
Static truth: D0 2400, alpha -0.6, D_offset 20, contrast 0.2, offset 1.0, q 0.007,
dt 0.05, noise sd 2e-3. Every chain starts at the truth; 2 chains x (500 warmup + 1000).
A variant is a set of config overrides for homodyne-hpc (VARIANTS below), so a change of
the sampler's geometry is measured against the same Stan run.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shutil
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
    "a": {"mode": "static", "angles": [0.0, 90.0], "frames": 60, "seed": 11},
    "b": {"mode": "static", "angles": [0.0, 45.0, 90.0, 135.0], "frames": 150, "seed": 12},
    # The demo dataset's physics, angles, contrast and noise (examples/CMakeLists.txt), on
    # the 40 frames the demo's CMC run samples, as one shard.
    "lam": {"mode": "laminar_flow", "frames": 40, "seed": 2024, "contrast": 0.3,
            "angles": [-20.0, 10.0, 40.0, 70.0, 100.0, 130.0, 160.0, 190.0]},
}
LAMINAR_TRUTH = {"D0": 20000.0, "alpha": -0.4, "D_offset": 10.0, "gamma_dot_t0": 0.003,
                 "beta": 0.2, "gamma_dot_t_offset": 0.0002, "phi0": 4.0}
# homodyne-hpc config overrides per variant (merged into optimization.cmc): the default
# coordinates, and each of their two parts alone, and neither.
OFF = {"scaling_geometry": False, "log_d0": False, "laplace_whitening": False}
VARIANTS = {
    "default": {},
    "geometry_only": {"reparameterization": {"laplace_whitening": False}},
    "whitening_only": {"reparameterization": {"scaling_geometry": False, "log_d0": False}},
    "plain": {"reparameterization": OFF},
}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


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


def base_config(shard, data_dir, data_file):
    s = SHARDS[shard]
    n = len(s["angles"])
    static = s["mode"] == "static"
    names = list(STATIC_TRUTH) if static else list(LAMINAR_TRUTH)
    truth = STATIC_TRUTH if static else LAMINAR_TRUTH
    cfg = {
        "analysis_mode": s["mode"],
        "analyzer_parameters": {"dt": DT if static else 0.1, "start_frame": 1,
                                "end_frame": s["frames"],
                                "scattering": {"wavevector_q": Q if static else 0.0054},
                                "geometry": {"stator_rotor_gap": 2000000}},
        "experimental_data": {"data_folder_path": data_dir, "data_file_name": data_file},
        "phi_filtering": {"enabled": False},
        "initial_parameters": {"parameter_names": names, "values": [truth[k] for k in names]},
        "output": {"fitted_data": "none"},
    }
    if static:
        cfg["initial_parameters"]["per_angle_scaling"] = {"contrast": [CONTRAST] * n,
                                                          "offset": [OFFSET] * n}
        cfg["parameter_space"] = {"bounds": [
            {"name": k, "min": PRIORS[k][2], "max": PRIORS[k][3], "type": "TruncatedNormal",
             "prior_mu": PRIORS[k][0], "prior_sigma": PRIORS[k][1]} for k in PRIORS]}
        cmc = {"enable": True, "per_angle_mode": "individual", "prior_tempering": False,
               "known_sigma": SIGMA}
    else:
        cmc = {"enable": True, "per_angle_mode": "auto", "prior_tempering": False}
    cmc.update({"seed": 42, "sharding": {"num_shards": 1},
                "per_shard_mcmc": {"num_warmup": 500, "num_samples": 1000, "num_chains": 2,
                                   "target_accept_prob": 0.8, "max_tree_depth": 10},
                "validation": {"use_nlsq_informed_priors": False},
                "backend_config": {"enable_checkpoints": False}})
    cfg["optimization"] = {"cmc": cmc, "mcmc": {"dense_mass_matrix": True}}
    return cfg


def make_shard(build, work, shard):
    s = SHARDS[shard]
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, f"shard_{shard}.h5")
    cfg_path = os.path.join(work, f"shard_{shard}.yaml")
    cfg = base_config(shard, work, os.path.basename(data))
    open(cfg_path, "w").write(yaml_dump(cfg) + "\n")
    if not os.path.exists(data):
        truth = STATIC_TRUTH if s["mode"] == "static" else LAMINAR_TRUTH
        cmd = [os.path.join(build, "apps", "homodyne-synth"), "--config", cfg_path, "-o", data,
               "--frames", str(s["frames"]), "--angles", ",".join(str(a) for a in s["angles"]),
               "--contrast", str(s.get("contrast", CONTRAST)), "--offset", str(OFFSET), "--noise", str(SIGMA),
               "--seed", str(s["seed"]), "--quiet"]
        for k, v in truth.items():
            cmd += ["--param", f"{k}={v}"]
        sh(cmd)
        n = len(s["angles"])
        c = s.get("contrast", CONTRAST)
        json.dump({"truth": {**truth, "contrast": [c] * n, "offset": [OFFSET] * n},
                   "params": truth, "contrast": [c] * n, "offset": [OFFSET] * n,
                   "frames": s["frames"], "seed": s["seed"]},
                  open(data[:-3] + ".truth.json", "w"))
    return cfg, cfg_path, data


def merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v


def run_hh(build, work, shard, cfg, metric, variant, mpiexec):
    cfg = json.loads(json.dumps(cfg))
    cfg["optimization"]["mcmc"]["dense_mass_matrix"] = metric == "dense"
    merge(cfg["optimization"]["cmc"], VARIANTS[variant])
    tag = f"hh_{shard}_{metric}_{variant}"
    cfg_path = os.path.join(work, tag + ".yaml")
    open(cfg_path, "w").write(yaml_dump(cfg) + "\n")
    out = os.path.join(work, tag)
    shutil.rmtree(out, ignore_errors=True)
    cmd = mpiexec + [os.path.join(build, "apps", "homodyne"), "--config", cfg_path,
                     "--method", "cmc", "--no-nlsq-warmstart", "--threads", "2",
                     "--output-dir", out, "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run(cmd, text=True, capture_output=True)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{tag}: homodyne exit {proc.returncode}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    diag = json.load(open(os.path.join(out, "cmc", "diagnostics.json")))
    sh_diag = json.load(open(os.path.join(out, "cmc", "shard_diagnostics.json")))
    ess = ESS_of_samples(os.path.join(out, "cmc", "samples.h5"), 2)
    d = sh_diag[0] if isinstance(sh_diag, list) else sh_diag["shards"][0]
    hist = d.get("tree_depth_histogram", [])
    draws = sum(hist) if hist else 1
    mean_depth = sum(i * c for i, c in enumerate(hist)) / draws if hist else float("nan")
    return {"tool": "homodyne-hpc", "shard": shard, "metric": metric, "variant": variant,
            "cpu_seconds": cpu, "wall_seconds": wall, "ess": ess,
            "sampling_gradients": d.get("gradient_evaluations"),
            "warmup_gradients": d.get("warmup_gradient_evaluations"),
            "mean_tree_depth": mean_depth,
            "cap_share": hist[-1] / draws if hist else float("nan"),
            "step_size": d.get("step_size_mean"), "divergences": d.get("divergences"),
            "acceptance": d.get("acceptance_rate"), "diagnostics_keys": sorted(diag)}


def ESS_of_samples(path, n_chains):
    import h5py
    with h5py.File(path, "r") as f:
        x = f["/shards/shard_00000"][()]
        names = f.attrs["param_names"]
        names = (names.decode() if isinstance(names, bytes) else str(names)).split(",")
    return ess_table(x, names, n_chains)


def ess_table(x, names, n_chains):
    n = x.shape[0] // n_chains
    res = {}
    for j, nm in enumerate(names):
        if nm == "lp__":
            continue
        s = x[:, j].reshape(n_chains, n).T
        # Monte Carlo standard error of the mean from the bulk ESS.
        eb = float(ESS.ess_bulk(s))
        res[nm] = {"mean": float(s.mean()), "sd": float(s.std(ddof=1)), "ess_bulk": eb,
                   "ess_tail": float(ESS.ess_tail(s)), "rhat": float(ESS.rhat(s)),
                   "mcse_mean": float(s.std(ddof=1) / np.sqrt(max(eb, 1.0)))}
    return res


def stan_available():
    if shutil.which("Rscript") is None:
        return False, "Rscript not found"
    p = subprocess.run(["Rscript", "-e", "suppressPackageStartupMessages(library(rstan))"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return False, "R package rstan not installed"
    return True, ""


def run_stan(work, shard, cfg_path, data, metric):
    sdata = os.path.join(work, f"shard_{shard}.data.json")
    if not os.path.exists(sdata):
        sh([sys.executable, os.path.join(HERE, "make_stan_data.py"), cfg_path, sdata,
            "--sigma", str(SIGMA)])
        # run_stan.R reads the truth (the chains' start) beside its data file: the same
        # name as the shard's own truth file, so nothing to copy.
        assert os.path.exists(sdata.replace(".data.json", ".truth.json"))
    tag = f"stan_{shard}_{metric}"
    out = os.path.join(work, tag + ".json")
    draws = os.path.join(work, tag + ".csv")
    sh(["Rscript", os.path.join(HERE, "run_stan.R"), f"--data={sdata}", "--chains=2", "--cores=2",
        f"--metric={metric}_e", "--adapt-delta=0.8", "--warmup=500", "--sampling=1000",
        "--init=truth", f"--out={out}", f"--save-draws={draws}",
        f"--cache-dir={os.path.join(work, 'stan_cache')}"])
    r = json.load(open(out))
    rows = np.loadtxt(draws, delimiter=",", skiprows=1)
    header = open(draws).readline().strip().replace('"', "").split(",")
    names = []
    for nm in header:
        if "." in nm:  # as.data.frame writes contrast[1] as contrast.1
            b, k = nm.split(".")
            nm = f"{b}_{int(k) - 1}"
        elif "[" in nm:
            b, k = nm.rstrip("]").split("[")
            nm = f"{b}_{int(k) - 1}"
        names.append(nm)
    ess = ess_table(rows, names, 2)
    summ = r["summary"]
    hist = [summ["treedepth_hist"][str(i)] for i in range(0, 11)]
    draws_n = sum(hist)
    return {"tool": "Stan", "shard": shard, "metric": metric, "variant": "rstan 2.21",
            "cpu_seconds": r["timing"]["warmup_chain_s_total"] + r["timing"]["sampling_chain_s_total"],
            "wall_seconds": r["timing"]["wall_sampling_call_s"], "ess": ess,
            "sampling_gradients": summ["grad_evals_sampling"],
            "warmup_gradients": summ["grad_evals_warmup"],
            "mean_tree_depth": summ["mean_treedepth"], "cap_share": hist[10] / draws_n,
            "step_size": float(np.mean([a["stepsize"] for a in r["adaptation"]])),
            "divergences": summ["divergences"], "acceptance": summ["mean_accept_stat"]}


def headline(run):
    e = run["ess"]
    bulk = min(v["ess_bulk"] for v in e.values())
    tail = min(v["ess_tail"] for v in e.values())
    run["min_ess_bulk"] = bulk
    run["min_ess_tail"] = tail
    run["max_rhat"] = max(v["rhat"] for v in e.values())
    run["ess_per_cpu_second"] = bulk / run["cpu_seconds"]
    run["ess_per_1k_sampling_gradients"] = 1e3 * bulk / max(run["sampling_gradients"], 1)
    return run


def compare_posteriors(hh, stan):
    """Means within 3 combined MCSE, sds within 10 %, per parameter."""
    out = {}
    for nm, s in stan["ess"].items():
        if nm not in hh["ess"]:
            continue
        h = hh["ess"][nm]
        mcse = np.hypot(h["mcse_mean"], s["mcse_mean"])
        out[nm] = {"mean_hh": h["mean"], "mean_stan": s["mean"],
                   "z_mean": (h["mean"] - s["mean"]) / mcse if mcse > 0 else 0.0,
                   "sd_ratio": h["sd"] / s["sd"] if s["sd"] > 0 else float("nan")}
    ok = all(abs(v["z_mean"]) <= 3 and abs(v["sd_ratio"] - 1) <= 0.10 for v in out.values())
    return {"parameters": out, "within_3_mcse_and_10pct_sd": ok}


def markdown(result):
    lines = ["| shard | tool | metric | variant | min bulk ESS | max R-hat | CPU s | ESS per CPU-s "
             "| mean tree depth | depth-10 share | ESS per 1k sampling gradients |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        lines.append(
            f"| {r['shard']} | {r['tool']} | {r['metric']} | {r['variant']} | "
            f"{r['min_ess_bulk']:.0f} | {r['max_rhat']:.3f} | {r['cpu_seconds']:.1f} | "
            f"{r['ess_per_cpu_second']:.3g} | {r['mean_tree_depth']:.2f} | "
            f"{100 * r['cap_share']:.1f} % | {r['ess_per_1k_sampling_gradients']:.3g} |")
    if result["comparisons"]:
        lines += ["", "| shard | metric | variant | posterior = Stan dense's (means within 3 MCSE, "
                  "sds within 10 %) | worst mean z | worst sd ratio | ESS/gradient vs Stan dense "
                  "| ESS/CPU-s vs Stan dense |", "|---|---|---|---|---|---|---|---|"]
        for c in result["comparisons"]:
            p = c["posterior"]["parameters"]
            zs = max(p.values(), key=lambda v: abs(v["z_mean"]))["z_mean"]
            sr = max(p.values(), key=lambda v: abs(v["sd_ratio"] - 1))["sd_ratio"]
            lines.append(f"| {c['shard']} | {c['metric']} | {c['variant']} | "
                         f"{'yes' if c['posterior']['within_3_mcse_and_10pct_sd'] else 'NO'} | "
                         f"{zs:+.2f} | {sr:.3f} | {c['ess_per_gradient_ratio']:.2f}x | "
                         f"{c['ess_per_cpu_second_ratio']:.1f}x |")
    if result.get("stan_skipped"):
        lines += ["", f"Stan skipped: {result['stan_skipped']}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None, help="data and run folder (default OUT/work)")
    ap.add_argument("--shards", default="a,b,lam")
    ap.add_argument("--metrics", default="dense")
    ap.add_argument("--variants", default="default")
    ap.add_argument("--stan", choices=["auto", "yes", "no"], default="auto")
    ap.add_argument("--report-only", action="store_true",
                    help="recompute the comparisons and the table of OUT/stan_bench.json")
    ap.add_argument("--stan-result", default=None,
                    help="reuse the Stan runs of an earlier stan_bench.json instead of rerunning")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out)
    if a.report_only:
        write_report(json.load(open(os.path.join(out, "stan_bench.json"))), out)
        return
    work = os.path.abspath(a.work or os.path.join(out, "work"))
    os.makedirs(out, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    mpiexec = ["mpiexec", "-n", "1", "--map-by", "slot:PE=2", "--bind-to", "core"]
    have_stan, why = stan_available() if a.stan != "no" else (False, "--stan no")
    if a.stan == "yes" and not have_stan:
        raise SystemExit(f"Stan requested but unavailable: {why}")
    if not have_stan and a.stan == "auto":
        print(f"Stan skipped: {why} (Debian: apt-get install -y r-cran-rstan r-cran-jsonlite)",
              file=sys.stderr)
    old_stan = []
    if a.stan_result:
        old_stan = [r for r in json.load(open(a.stan_result))["runs"] if r["tool"] == "Stan"]
    result = {"benchmark": "NUTS on one CMC shard: homodyne-hpc and Stan (rstan)",
              "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": {"host": platform.node(), "cpu": cpu_model(), "cpus": os.cpu_count()},
              "settings": {"chains": 2, "warmup": 500, "sampling": 1000, "adapt_delta": 0.8,
                           "max_tree_depth": 10, "sigma": SIGMA, "init": "truth"},
              "runs": [], "comparisons": [],
              "stan_skipped": None if have_stan or old_stan else why}
    for shard in a.shards.split(","):
        cfg, cfg_path, data = make_shard(build, work, shard)
        for metric in a.metrics.split(","):
            stan = None
            if SHARDS[shard]["mode"] == "static":
                reuse = [r for r in old_stan if r["shard"] == shard and r["metric"] == metric]
                if reuse:
                    stan = reuse[0]
                elif have_stan:
                    print(f"[stan] shard {shard} {metric} ...", file=sys.stderr, flush=True)
                    stan = headline(run_stan(work, shard, cfg_path, data, metric))
                if stan:
                    result["runs"].append(stan)
            for variant in a.variants.split(","):
                if metric == "diag" and variant not in ("default", "plain"):
                    continue  # the parts of the default are measured with the dense metric
                print(f"[homodyne-hpc] shard {shard} {metric} {variant} ...", file=sys.stderr,
                      flush=True)
                hh = headline(run_hh(build, work, shard, cfg, metric, variant, mpiexec))
                result["runs"].append(hh)
                print(f"  min bulk ESS {hh['min_ess_bulk']:.0f}, cpu {hh['cpu_seconds']:.1f} s, "
                      f"depth {hh['mean_tree_depth']:.2f}, cap {100 * hh['cap_share']:.1f} %, "
                      f"ESS/1k grad {hh['ess_per_1k_sampling_gradients']:.3g}", file=sys.stderr)
                result["comparisons"] = comparisons(result["runs"])
                json.dump(result, open(os.path.join(out, "stan_bench.json"), "w"), indent=1)
    write_report(result, out)


def comparisons(runs):
    """Every homodyne-hpc run against Stan's dense run of its shard (the reference: Stan's
    best-mixing posterior), ratios of ESS per gradient and per CPU-second included."""
    out = []
    for hh in runs:
        if hh["tool"] != "homodyne-hpc":
            continue
        ref = [r for r in runs if r["tool"] == "Stan" and r["shard"] == hh["shard"]
               and r["metric"] == "dense"]
        if not ref:
            continue
        ref = ref[0]
        out.append({"shard": hh["shard"], "metric": hh["metric"], "variant": hh["variant"],
                    "posterior": compare_posteriors(hh, ref),
                    "ess_per_gradient_ratio": hh["ess_per_1k_sampling_gradients"]
                    / ref["ess_per_1k_sampling_gradients"],
                    "ess_per_cpu_second_ratio": hh["ess_per_cpu_second"]
                    / ref["ess_per_cpu_second"]})
    return out


def write_report(result, out):
    result["comparisons"] = comparisons(result["runs"])
    json.dump(result, open(os.path.join(out, "stan_bench.json"), "w"), indent=1)
    open(os.path.join(out, "stan_bench.md"), "w").write(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
