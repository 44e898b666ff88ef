#!/usr/bin/env python3
"""CMC consensus against the full-data posterior on unimodal synthetic data (docs/cmc.md,
step 7b): for every dataset, the NLSQ fit at 2 ranks, then CMC on 3 shards at 2 ranks from
that answer, then the full-data posterior from the same answer: one shard = all the data,
sampled by one LONG run (more chains, longer warmup and draws, the template's tree depth,
warmup reruns), whose own R-hat, ESS and divergences are recorded; a reference that is not
converged is reported as such and its ratios are not counted. Records per physical parameter
the consensus sd over the full-data sd and over the NLSQ uncertainty, and the bimodality
verdicts. Where homodyne's screen alone would have split a shard, the binary given as --old
(the rule before) is run on the same NLSQ answer for its sds.

Steps whose outputs exist in --work (same command) are reused, so the full-data references
can be sampled before the shards (--skip-cmc) and the study finished later.

  cmc_bimodality_study.py --build BUILD --out-json F.json --out-md F.md [--old BINARY]
                          [--datasets N] [--work DIR] [--skip-cmc] [--only i,j,...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LO, HI = 0.75, 1.33  # the acceptance band of sd(consensus) / sd(full data)
# Chains that mixed: R-hat at most MIX_RHAT and min ESS at least MIX_ESS. The full-data
# reference's default rule (--ref-rhat, --ref-ess), and the shards' in the summary: a
# consensus of chains that did not mix is counted apart, whatever its ratios.
MIX_RHAT, MIX_ESS = 1.05, 100
DRAWS = ""
REF = ""


def template(mode, data_dir, tree_depth, warmup_retries=None):
    """homodyne's template for `mode`, pointed at data_dir/data.h5 with dt 0.1, all frames,
    the shards' tree depth capped at tree_depth (the template's 10 lets one hard shard take
    10 minutes on a loaded 2-core machine), warmup_retries if given."""
    path = os.path.join(ROOT, "examples", f"homodyne_{mode}_config.yaml")
    s = open(path).read()
    s = s.replace('data_folder_path: "./data/sample/"', f'data_folder_path: "{data_dir}/"')
    s = s.replace('data_file_name: "sample_data.hdf"', 'data_file_name: "data.h5"')
    s = s.replace("dt: 0.001 ", "dt: 0.1 ").replace("end_frame: 2000 ", "end_frame: -1 ")
    s = s.replace("      max_tree_depth: 10", f"      max_tree_depth: {tree_depth}")
    # The template's CMC checkpoints go to ./checkpoints: keep each run's beside its data.
    s = s.replace('checkpoint_dir: "./checkpoints"', f'checkpoint_dir: "{data_dir}/checkpoints"')
    assert f"{data_dir}/" in s and "dt: 0.1 " in s and "end_frame: -1 " in s, path
    assert f"      max_tree_depth: {tree_depth}" in s, path
    if warmup_retries is not None:
        s = s.replace("      max_divergence_rate: 0.10",
                      f"      max_divergence_rate: 0.10\n      warmup_retries: {warmup_retries}")
        assert f"warmup_retries: {warmup_retries}" in s, path
    return s


def datasets(n):
    """Item 4 of issue #38 first, then laminar and static truths around it (unimodal but for
    the one laminar truth with beta = 0, not_identified)."""
    out = [("laminar_flow", "0,45,90,135", 7,
            dict(D0=20000, alpha=-0.4, D_offset=100, gamma_dot_t0=0.003, beta=0.2,
                 gamma_dot_t_offset=0.0002, phi0=4))]
    lam = [(8000, -0.6, 0, 0.002, 0.1, 1e-4, -3), (30000, -0.2, 300, 0.005, 0.3, 3e-4, 6),
           (15000, -0.5, 50, 0.001, 0.2, 0.0, 2), (25000, -0.3, -50, 0.004, 0.0, 2e-4, -5),
           (12000, -0.4, 20, 0.003, 0.25, 1e-4, 1), (20000, -0.4, 100, 0.003, 0.2, 2e-4, 4),
           (40000, -0.7, 500, 0.002, 0.15, 0.0, 0), (10000, -0.1, 10, 0.006, 0.3, 3e-4, 8),
           (18000, -0.5, 200, 0.0015, 0.1, 1e-4, -2), (22000, -0.3, 0, 0.0035, 0.2, 2e-4, 3),
           (16000, -0.45, 80, 0.0025, 0.18, 1e-4, 5)]  # with item 4: 12 laminar
    for k, (d0, a, off, g, b, go, p) in enumerate(lam):
        out.append(("laminar_flow", "0,45,90,135", 100 + k,
                    dict(D0=d0, alpha=a, D_offset=off, gamma_dot_t0=g, beta=b,
                         gamma_dot_t_offset=go, phi0=p)))
    sta = [(20000, -0.4, 100), (8000, -0.6, 0), (30000, -0.2, 300), (15000, -0.5, 50),
           (25000, -0.3, -50), (12000, -0.4, 20), (40000, -0.7, 500), (10000, -0.1, 10),
           (18000, -0.5, 200), (22000, -0.3, 0)]  # the first 8 by default
    for k, (d0, a, off) in enumerate(sta):
        out.append(("static", "0,60,120,180", 200 + k, dict(D0=d0, alpha=a, D_offset=off)))
    lam_rest, sta_rest = out[1:12], out[12:]
    mixed = [out[0]]
    for k in range(max(len(lam_rest), len(sta_rest))):
        mixed += sta_rest[k:k + 1] + lam_rest[k:k + 1]
    return mixed[:n]


def run(cmd, log, reuse=None):
    """Runs cmd (output to log); with reuse = a file the run writes, a run of the same
    command that already wrote it is not repeated."""
    stamp = log + ".cmd"
    # The binaries by name: a copy of the same build may run the first steps.
    key = " ".join(os.path.basename(x) if os.path.isfile(x) and os.access(x, os.X_OK) else x
                   for x in cmd)
    if reuse and os.path.exists(reuse) and os.path.exists(stamp) and open(stamp).read() == key:
        return 0
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc == 0:
        open(stamp, "w").write(key)
    return rc


def write_if_new(path, text):
    """A run of the same --work may be reading it."""
    if not os.path.exists(path) or open(path).read() != text:
        open(path, "w").write(text)


def wait_for(pid_file, log, reuse):
    """While a process listed in pid_file (--skip-cmc runs on the same --work) runs, wait
    until the step logged in `log` has written `reuse`."""
    def running():
        if not pid_file or not os.path.exists(pid_file):
            return False
        pids = open(pid_file).read().split()
        return any(os.path.exists(f"/proc/{p}") for p in pids)
    while running() and not (os.path.exists(reuse) and os.path.exists(log + ".cmd")):
        time.sleep(10)


def reference_verdict(f, rhat_max, ess_min, div_max):
    """Is the full-data reference sampled? Its own max R-hat, min ESS and divergence rate."""
    why = []
    if f["max_r_hat"] > rhat_max:
        why.append(f"R-hat {f['max_r_hat']:.3f} > {rhat_max}")
    if f["min_ess"] < ess_min:
        why.append(f"min ESS {f['min_ess']:.1f} < {ess_min:.0f}")
    if f["divergence_rate"] > div_max:
        why.append(f"{100 * f['divergence_rate']:.1f} % divergent > {100 * div_max:.0f} %")
    return why


def shard_records(out_dir):
    """Per shard: divergence rate, max R-hat, min ESS, warmup runs and whether it was kept."""
    out = []
    for s in json.load(open(os.path.join(out_dir, "shard_diagnostics.json"))):
        out.append({k: s.get(k) for k in ("shard", "divergence_rate", "max_r_hat", "min_ess",
                                          "num_warmup", "warmup_attempts",
                                          "used_in_combination", "rejection_reason")})
    return out


def shards_mixed(r):
    """Whether every shard kept for the consensus mixed (MIX_RHAT, MIX_ESS), and its worst."""
    used = [x for x in r["shards"] if x.get("used_in_combination", True)] or r["shards"]
    rhat = max(x["max_r_hat"] for x in used)
    ess = min(x["min_ess"] for x in used)
    return rhat <= MIX_RHAT and ess >= MIX_ESS, rhat, ess


def not_identified(r):
    """Why the model cannot identify the dataset's truth, decided from the truth alone (before
    any run), or "": at beta = 0 the shear rate is gamma_dot_t0 + gamma_dot_t_offset at every
    time, so the data fix only their sum and the posterior is a ridge along it, bounded only by
    the parameter bounds. Such a posterior is not unimodal; it is reported, not counted."""
    t = r["truth"]
    if r["mode"] == "laminar_flow" and t.get("beta") == 0:
        return "beta = 0: gamma_dot_t0 and gamma_dot_t_offset enter only as their sum"
    return ""


def sds(out_dir):
    p = json.load(open(os.path.join(out_dir, "parameters.json")))["parameters"]
    return {k: v["std"] for k, v in p.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--old", default=None)
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--work", default=None)
    ap.add_argument("--old-max", type=int, default=2, help="runs of the rule before, at most")
    ap.add_argument("--n-warmup", type=int, default=300)
    ap.add_argument("--n-samples", type=int, default=600)
    ap.add_argument("--tree-depth", type=int, default=8)
    ap.add_argument("--shards", type=int, default=3, help="as in issue #38 item 4")
    ap.add_argument("--ref-chains", type=int, default=4, help="full-data reference: chains")
    ap.add_argument("--ref-warmup", type=int, default=1000)
    ap.add_argument("--ref-samples", type=int, default=1000, help="per chain")
    ap.add_argument("--ref-tree-depth", type=int, default=10, help="the template's")
    ap.add_argument("--ref-warmup-retries", type=int, default=2)
    ap.add_argument("--ref-rhat", type=float, default=MIX_RHAT,
                    help="converged reference: R-hat <=")
    ap.add_argument("--ref-ess", type=float, default=MIX_ESS,
                    help="converged reference: min ESS >=")
    ap.add_argument("--ref-div", type=float, default=0.05,
                    help="converged reference: divergence rate <=")
    ap.add_argument("--skip-cmc", action="store_true",
                    help="only the data, NLSQ and the full-data references")
    ap.add_argument("--wait-for", default="",
                    help="file of pids of --skip-cmc runs on the same --work: use their NLSQ"
                         " answers and references as they come")
    ap.add_argument("--first", default="",
                    help="comma-separated dataset numbers to run before the others")
    ap.add_argument("--only", default="",
                    help="comma-separated dataset numbers: run these and no others")
    ap.add_argument("--summarise-only", action="store_true",
                    help="write the Markdown from the records already in --out-json")
    ap.add_argument("--note", default="",
                    help="a paragraph for the Markdown (e.g. where merged records came from)")
    a = ap.parse_args()
    global DRAWS, REF
    DRAWS = (f"{a.shards} shards, 2 chains x ({a.n_warmup} warmup + {a.n_samples} draws) each,"
             f" tree depth <= {a.tree_depth}")
    REF = (f"{a.ref_chains} chains x ({a.ref_warmup} warmup + {a.ref_samples} draws), tree depth"
           f" <= {a.ref_tree_depth}, warmup reruns <= {a.ref_warmup_retries}; counted as"
           f" sampled when R-hat <= {a.ref_rhat}, min ESS >= {a.ref_ess:.0f} and at most"
           f" {100 * a.ref_div:.0f} % divergent draws")
    if a.summarise_only:
        summarise(json.load(open(a.out_json))["records"], a.out_json, a.out_md, a.datasets,
                  a.note)
        return
    work = a.work or tempfile.mkdtemp(prefix="cmc_bimodality_")
    homodyne = os.path.join(a.build, "apps", "homodyne")
    synth = os.path.join(a.build, "apps", "homodyne-synth")
    one_rank = ["mpiexec", "-n", "1", "--bind-to", "none"]
    draws = ["--n-warmup", str(a.n_warmup), "--n-samples", str(a.n_samples)]
    ref_draws = ["--n-warmup", str(a.ref_warmup), "--n-samples", str(a.ref_samples),
                 "--n-chains", str(a.ref_chains)]
    shards = ["--cmc-num-shards", str(a.shards)]
    records = []
    old_runs = 0
    cases = list(enumerate(datasets(a.datasets)))
    first = [int(k) for k in a.first.split(",") if k]
    cases.sort(key=lambda c: (first.index(c[0]) if c[0] in first else len(first), c[0]))
    only = [int(k) for k in a.only.split(",") if k]
    if only:
        cases = [c for c in cases if c[0] in only]
    for i, (mode, angles, seed, truth) in cases:
        d = os.path.join(work, f"d{i:02d}")
        os.makedirs(d, exist_ok=True)
        nlsq_dir = os.path.join(d, "n", "nlsq")
        wait_for(a.wait_for, os.path.join(d, "nlsq.log"), os.path.join(nlsq_dir, "parameters.json"))
        cfg = os.path.join(d, "config.yaml")
        write_if_new(cfg, template(mode, d, a.tree_depth))
        ref_cfg = os.path.join(d, "reference.yaml")
        write_if_new(ref_cfg, template(mode, d, a.ref_tree_depth, a.ref_warmup_retries))
        params = sum((["--param", f"{k}={v}"] for k, v in truth.items()), [])
        rc = run([synth, "--config", cfg, "-o", os.path.join(d, "data.h5"), "--frames", "100",
                  "--angles", angles, "--noise", "0.003", "--seed", str(seed), "-q", "--force"]
                 + params, os.path.join(d, "synth.log"), os.path.join(d, "data.h5"))
        rec = {"dataset": i, "mode": mode, "angles": angles, "seed": seed, "truth": truth}
        rc = rc or run(["mpiexec", "-n", "2", homodyne, "--config", cfg, "--method", "nlsq",
                        "-o", os.path.join(d, "n"), "--threads", "1", "-q"],
                       os.path.join(d, "nlsq.log"), os.path.join(nlsq_dir, "parameters.json"))
        if not a.skip_cmc:
            t0 = time.time()
            rc = rc or run(["mpiexec", "-n", "2", homodyne, "--config", cfg, "--method", "cmc",
                            "--nlsq-result", nlsq_dir, "-o", os.path.join(d, "k"),
                            "--threads", "1", "-q"] + draws + shards, os.path.join(d, "k.log"))
            rec["cmc_seconds"] = time.time() - t0
        full_params = os.path.join(d, "full", "cmc", "parameters.json")
        wait_for(a.wait_for, os.path.join(d, "full.log"), full_params)
        t0 = time.time()
        rc = rc or run(one_rank + [homodyne, "--config", ref_cfg, "--method", "cmc",
                                   "--nlsq-result", nlsq_dir, "--cmc-num-shards", "1",
                                   "-o", os.path.join(d, "full"), "--threads", "2", "-q"]
                       + ref_draws, os.path.join(d, "full.log"), full_params)
        rec["full_seconds"] = time.time() - t0
        if a.skip_cmc:
            print(f"dataset {i}: reference {'done' if rc == 0 else 'failed'} "
                  f"({rec['full_seconds']:.0f} s)", flush=True)
            continue
        rec["exit_code"] = rc
        if rc != 0:
            records.append(rec)
            print(f"dataset {i}: failed (exit {rc}), logs in {d}", file=sys.stderr)
            continue
        diag = json.load(open(os.path.join(d, "k", "cmc", "diagnostics.json")))["cmc_specific"]
        nlsq = json.load(open(os.path.join(nlsq_dir, "parameters.json")))["parameters"]
        cons, full = sds(os.path.join(d, "k", "cmc")), sds(os.path.join(d, "full", "cmc"))
        names = [n for n in truth if n in cons]
        rec["num_shards"] = diag.get("num_shards_used")
        rec["bimodality"] = diag["bimodality"]
        rec["mode_aware_applied"] = bool((diag.get("mode_aware_consensus") or {}).get("applied"))
        rec["shards_flagged"] = sum(len(b["bimodal_shards"]) for b in diag["bimodality"])
        rec["shards_screened"] = sum(len(b.get("screened_shards", [])) for b in diag["bimodality"])
        rec["shards"] = shard_records(os.path.join(d, "k", "cmc"))
        rec["full_shard"] = shard_records(os.path.join(d, "full", "cmc"))[0]
        rec["reference_not_sampled"] = reference_verdict(rec["full_shard"], a.ref_rhat,
                                                         a.ref_ess, a.ref_div)
        rec["sd_consensus"] = {n: cons[n] for n in names}
        rec["sd_full"] = {n: full[n] for n in names}
        rec["sd_nlsq"] = {n: nlsq[n]["uncertainty"] for n in names}
        rec["ratio_full"] = {n: cons[n] / full[n] for n in names}
        rec["ratio_nlsq"] = {n: cons[n] / nlsq[n]["uncertainty"] for n in names}
        rec["within_band"] = all(LO <= r <= HI for r in rec["ratio_full"].values())
        # The rule before, where homodyne's screen alone would have flagged a parameter.
        screened = any(len(b.get("screened_shards", [])) >= max(1, 0.05 * b["shards_tested"])
                       for b in diag["bimodality"])
        if a.old and screened and old_runs < a.old_max:
            old_runs += 1
            rc = run(["mpiexec", "-n", "2", a.old, "--config", cfg, "--method", "cmc",
                      "--nlsq-result", nlsq_dir, "-o",
                      os.path.join(d, "old"), "--threads", "1", "-q"] + draws + shards,
                     os.path.join(d, "old.log"))
            if rc == 0:
                old = sds(os.path.join(d, "old", "cmc"))
                rec["old_ratio_full"] = {n: old[n] / full[n] for n in names}
                rec["old_ratio_nlsq"] = {n: old[n] / nlsq[n]["uncertainty"] for n in names}
        records.append(rec)
        print(f"dataset {i} ({mode}): shards {rec['num_shards']}, flagged {rec['shards_flagged']}"
              f", screened {rec['shards_screened']}, sd/full "
              + ", ".join(f"{n} {r:.2f}" for n, r in rec["ratio_full"].items()), flush=True)
        json.dump({"records": records}, open(a.out_json, "w"), indent=1)
    summarise(records, a.out_json, a.out_md, a.datasets, a.note)


def summarise(records, out_json, out_md, planned=None, note=""):
    records = sorted(records, key=lambda r: r["dataset"])
    ok = [r for r in records if r.get("exit_code") == 0]
    ident = [r for r in ok if not not_identified(r)]
    ratios = [x for r in ok for x in r["ratio_full"].values()]
    summary = {
        "datasets": planned or len(records), "completed": len(ok),
        "laminar": sum(r["mode"] == "laminar_flow" for r in ok),
        "static": sum(r["mode"] == "static" for r in ok),
        "shards_flagged": sum(r["shards_flagged"] for r in ok),
        "datasets_with_a_flag": sum(r["shards_flagged"] > 0 for r in ok),
        "datasets_screened_by_the_rule_before": sum(r["shards_screened"] > 0 for r in ok),
        "datasets_within_band": sum(r["within_band"] for r in ok),
        "shards_rerun": sum((s.get("warmup_attempts") or 1) > 1 for r in ok for s in r["shards"]),
        "shards_rejected": sum(not s["used_in_combination"] for r in ok for s in r["shards"]),
        "references_sampled": sum(not r["reference_not_sampled"] for r in ok),
        "within_band_with_a_sampled_reference": sum(
            r["within_band"] and not r["reference_not_sampled"] for r in ok),
        "shards_mixed": sum(shards_mixed(r)[0] for r in ok),
        "within_band_with_mixed_shards_and_a_sampled_reference": sum(
            r["within_band"] and shards_mixed(r)[0] and not r["reference_not_sampled"]
            for r in ok),
        "identified": len(ident),
        "identified_within_band": sum(r["within_band"] for r in ident),
        "identified_references_sampled": sum(not r["reference_not_sampled"] for r in ident),
        "identified_within_band_with_a_sampled_reference": sum(
            r["within_band"] and not r["reference_not_sampled"] for r in ident),
        "not_identified": {str(r["dataset"]): not_identified(r) for r in ok
                           if not_identified(r)},
        "mixed_rule": f"every kept shard max R-hat <= {MIX_RHAT}, min ESS >= {MIX_ESS}",
        "ratio_full_min": min(ratios) if ratios else None,
        "ratio_full_max": max(ratios) if ratios else None,
        "band": [LO, HI],
        "draws": DRAWS,
        "reference": REF,
        "note": note,
    }
    json.dump({"summary": summary, "records": records}, open(out_json, "w"), indent=1)
    lines = [
        "# CMC consensus against the full-data posterior (bimodality rule)", "",
        "Written by `bench/run_cmc_bimodality_study.sh`. Each dataset: homodyne's template "
        "(dt 0.1, 100 frames, 4 angles of which phi_filtering keeps 2, noise 0.003), "
        f"`homodyne --method cmc --nlsq-result ...` at 2 ranks ({summary['draws']}), then the "
        "full-data posterior (`--method cmc "
        "--nlsq-result ... --cmc-num-shards 1`: one shard = all data, one long run: "
        f"{summary['reference']}). Both start from the same NLSQ answer (`--method nlsq` at "
        "2 ranks); one shard is its own consensus, bit for bit, so the reference does not "
        "depend on the consensus rule.",
        "", f"Completed {summary['completed']} of {summary['datasets']} datasets "
        f"({summary['laminar']} laminar_flow, {summary['static']} static). Shards flagged "
        f"bimodal: {summary['shards_flagged']}. Shards rerun with a longer warmup: "
        f"{summary['shards_rerun']}; shards rejected: {summary['shards_rejected']}. Datasets where homodyne's screen alone (the rule "
        f"before) fires: {summary['datasets_screened_by_the_rule_before']}. Datasets with every "
        f"physical sd ratio inside [{LO}, {HI}]: {summary['datasets_within_band']}; full-data "
        f"references sampled: {summary['references_sampled']}, of these inside the band: "
        f"{summary['within_band_with_a_sampled_reference']}; ratios "
        f"{summary['ratio_full_min']:.3f} to {summary['ratio_full_max']:.3f}. Datasets whose "
        f"kept shards all mixed ({summary['mixed_rule']}): {summary['shards_mixed']}; of these "
        "with a sampled reference, inside the band: "
        f"{summary['within_band_with_mixed_shards_and_a_sampled_reference']}. Datasets whose "
        "truth the model identifies (not a ridge by construction, decided from the truth "
        f"before any run): {summary['identified']}; of these inside the band: "
        f"{summary['identified_within_band']}; with a sampled reference: "
        f"{summary['identified_references_sampled']}, of these inside: "
        f"{summary['identified_within_band_with_a_sampled_reference']}."
        + "".join(f" Dataset {k} is not identified ({v}): its posterior is a ridge, not one "
                  "mode, and its ratios are reported but not counted."
                  for k, v in summary["not_identified"].items()) if ratios else "",
        *(["", note] if note else []),
        "", "Shards rerun: those whose first chains diverged above max_divergence_rate, rerun "
        "with twice the warmup (docs/cmc.md, step 6b); the full-data reference's own max R̂, "
        "min ESS, divergence rate and warmup runs are given beside it, and why it does not "
        "count as sampled where it does not.", "",
        "| # | mode | shards | rerun | flagged | screened | shards: max R̂, min ESS | "
        "sd(consensus)/sd(full) | sd(consensus)/NLSQ σ | full data: R̂, ESS, div, runs | "
        "rule before: sd/sd(full) |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if r.get("exit_code") != 0:
            lines.append(f"| {r['dataset']} | {r['mode']} | failed (exit {r.get('exit_code')}) "
                         "| | | | | | | | |")
            continue
        fmt = lambda m: ", ".join(f"{k} {v:.2f}" for k, v in m.items())
        rerun = sum((s.get("warmup_attempts") or 1) > 1 for s in r["shards"])
        f = r["full_shard"]
        full = (f"{f['max_r_hat']:.3f}, {f['min_ess']:.0f}, {100 * f['divergence_rate']:.1f} %,"
                f" {f.get('warmup_attempts') or 1}")
        if r["reference_not_sampled"]:
            full += " (not sampled: " + "; ".join(r["reference_not_sampled"]) + ")"
        mixed, rhat, ess = shards_mixed(r)
        mix = f"{rhat:.3f}, {ess:.0f}" + ("" if mixed else " (not mixed)")
        mode = r["mode"] + (" (not identified)" if not_identified(r) else "")
        lines.append(f"| {r['dataset']} | {mode} | {r['num_shards']} | {rerun} | "
                     f"{r['shards_flagged']} | {r['shards_screened']} | {mix} | "
                     f"{fmt(r['ratio_full'])} | "
                     f"{fmt(r['ratio_nlsq'])} | {full} | "
                     f"{fmt(r['old_ratio_full']) if 'old_ratio_full' in r else ''} |")
    open(out_md, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
