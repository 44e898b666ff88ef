#!/usr/bin/env python3
"""Offline check of the consensus coordinates (docs/cmc.md, "Consensus: what was tried"):
re-combines the shards' draws of a finished `cmc_bimodality_study.py --work DIR` dataset
in other coordinates and compares each physical sd with the full-data posterior's.

The shards' draws (`k/cmc/samples.h5`, /shards/shard_NNNNN, physical parameters) are
mapped to sampling-like coordinates, combined with the product's rule (per-coordinate
precision weights, draw j of every shard), mapped back, and the sd of each physical
parameter divided by the full-data reference's (`full/cmc/samples.h5`, /samples).
Coordinates compared:
  current   the product's, as diagnostics.json's sampled_coordinates says: with step 5
            log D_ref, log(D_offset/D_ref + 1 - 1e-4), alpha, log gamma_ref, beta,
            gamma_dot_t_offset, phi0 (interval parameters by their logit), D_ref and
            gamma_ref at t_ref = sqrt(dt * t_max); without (the individual layout) log D0
            and every other physical parameter by the logit of its box;
  pivot:T   step 5's coordinates with the amplitudes taken at the pivot time T;
  decor     the pivot of each power law chosen from the shards' pooled covariance so that
            log amplitude and exponent are uncorrelated: ln t_p = -cov(ln A, k) / var(k);
  Q         per coordinate, Cochran's Q of the shards' means against their own variances;
  shards    no combination: each coordinate's 1 / sqrt(sum_s 1 / v_s) in the current
            coordinates against the full posterior's sd of the same coordinate (what any
            per-coordinate rule gives in them).
  cmc_pivot_offline.py DIR/dNN [DIR/dMM ...] [--pivots 1,3,5] [--json OUT]
"""
import argparse
import json
import math
import os

import h5py
import numpy as np

BOUNDS = {"D_offset": (-1.0e5, 1.0e5), "gamma_dot_t0": (1.0e-6, 0.5), "alpha": (-2.0, 2.0), "beta": (-2.0, 2.0), "gamma_dot_t_offset": (-0.1, 0.1),
          "phi0": (-10.0, 10.0), "contrast": (0.0, 1.0), "offset": (0.5, 1.5)}
RATIO_LOWER = -1.0 + 1e-4
# The study's data: dt 0.1, 100 frames, t = 0 ... 9.9 s (the loader's grid from 0).
T_REF = math.sqrt(0.1 * 9.9)
PHYS = ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]


def logit(x, lo, hi):
    s = (x - lo) / (hi - lo)
    return np.log(s) - np.log1p(-s)


def logistic(u, lo, hi):
    return lo + (hi - lo) / (1.0 + np.exp(-u))


def to_coords(x, names, tp_d, tp_g):
    """Physical draws (n x p) -> coordinates; tp_d / tp_g the pivots (None: log D0 and the
    other parameters by the logit of their boxes, the individual layout's)."""
    c = {n: x[:, i] for i, n in enumerate(names)}
    out = {}
    laminar = "gamma_dot_t0" in c and tp_d is not None
    if laminar:
        log_dref = np.log(c["D0"]) + c["alpha"] * math.log(tp_d)
        out["D0"] = log_dref
        out["D_offset"] = np.log(c["D_offset"] / np.exp(log_dref) - RATIO_LOWER)
        out["gamma_dot_t0"] = np.log(c["gamma_dot_t0"]) + c["beta"] * math.log(tp_g)
    else:
        out["D0"] = np.log(c["D0"])
    for n in names:
        if n in out:
            continue
        out[n] = logit(c[n], *BOUNDS[n]) if n in BOUNDS else c[n]
    return np.column_stack([out[n] for n in names])


def from_coords(u, names, tp_d, tp_g):
    c = {n: u[:, i] for i, n in enumerate(names)}
    out = {}
    for n in names:
        out[n] = logistic(c[n], *BOUNDS[n]) if n in BOUNDS else c[n]
    if "gamma_dot_t0" in c and tp_d is not None:
        dref = np.exp(c["D0"])
        out["D0"] = dref * np.exp(-out["alpha"] * math.log(tp_d))
        out["D_offset"] = dref * (np.exp(c["D_offset"]) + RATIO_LOWER)
        out["gamma_dot_t0"] = np.exp(c["gamma_dot_t0"] - out["beta"] * math.log(tp_g))
    else:
        out["D0"] = np.exp(c["D0"])
    return np.column_stack([out[n] for n in names])


def combine(us):
    n = min(len(u) for u in us)
    prec = [1.0 / np.var(u[:n], axis=0, ddof=1) for u in us]
    tot = sum(prec)
    return sum(p * u[:n] for p, u in zip(prec, us)) / tot


def read(path, group):
    with h5py.File(path, "r") as f:
        raw = f.attrs["param_names"]
        names = (raw.decode() if isinstance(raw, bytes) else str(raw)).split(",")
        if group == "shards":
            return names, [f["shards"][k][()] for k in sorted(f["shards"])]
        return names, f["samples"][()]


def decor_pivots(shards, names):
    """ln t_p = -cov(ln A, k)/var(k) on the shards' mean covariance (A = D0, gamma_dot_t0)."""
    def piv(a, k):
        covs = [np.cov(np.log(x[:, names.index(a)]), x[:, names.index(k)]) for x in shards]
        m = sum(covs) / len(covs)
        return math.exp(-m[0, 1] / m[1, 1])
    return piv("D0", "alpha"), piv("gamma_dot_t0", "beta")


def analyse(d, pivots):
    names, shards = read(os.path.join(d, "k", "cmc", "samples.h5"), "shards")
    fnames, full = read(os.path.join(d, "full", "cmc", "samples.h5"), "samples")
    assert fnames == names, (fnames, names)
    phys = [n for n in PHYS if n in names]
    sd_full = full.std(axis=0, ddof=1)
    with h5py.File(os.path.join(d, "k", "cmc", "samples.h5"), "r") as f:
        product = f["samples"][()]
    sampled = json.load(open(os.path.join(d, "k", "cmc", "diagnostics.json")))
    step5 = "log D_ref" in sampled["cmc_specific"]["sampled_coordinates"]
    t_ref = T_REF if step5 else None
    rec = {"dir": d, "t_ref": t_ref, "step5_coordinates": step5, "shards": len(shards), "draws": [len(x) for x in shards]}
    for key, sub in (("shard_diagnostics", "k"), ("reference_diagnostics", "full")):
        diag = json.load(open(os.path.join(d, sub, "cmc", "shard_diagnostics.json")))
        rec[key] = [{k: s.get(k) for k in ("max_r_hat", "min_ess", "divergence_rate",
                                            "warmup_attempts", "coordinates")} for s in diag]

    def ratios(tp_d, tp_g):
        comb = from_coords(combine([to_coords(x, names, tp_d, tp_g) for x in shards]),
                           names, tp_d, tp_g)
        sd = comb.std(axis=0, ddof=1)
        return {n: float(sd[names.index(n)] / sd_full[names.index(n)]) for n in phys}

    rec["product"] = {n: float(product[:, names.index(n)].std(ddof=1) /
                               sd_full[names.index(n)]) for n in phys}
    rec["current"] = ratios(t_ref, t_ref)
    rec["pivot"] = {str(t): ratios(t, t) for t in pivots}
    pd, pg = decor_pivots(shards, names)
    rec["decor_pivots"] = [pd, pg]
    rec["decor"] = ratios(pd, pg)
    # Per coordinate, in the current coordinates: what any per-coordinate rule gives.
    us = [to_coords(x, names, t_ref, t_ref) for x in shards]  # the product's coordinates
    uf = to_coords(full, names, t_ref, t_ref)
    pooled = 1.0 / np.sqrt(sum(1.0 / np.var(u, axis=0, ddof=1) for u in us))
    rec["coordinate_sd_ratio"] = {n: float(pooled[names.index(n)] /
                                            uf[:, names.index(n)].std(ddof=1)) for n in phys}
    # Per coordinate: do the shards agree? Cochran's Q of their means against their own
    # variances (K - 1 degrees of freedom when they sample one posterior, each sd the
    # posterior's on its data).
    means = np.array([u.mean(axis=0) for u in us])
    w = np.array([1.0 / np.var(u, axis=0, ddof=1) for u in us])
    centre = (w * means).sum(axis=0) / w.sum(axis=0)
    q = (w * (means - centre) ** 2).sum(axis=0)
    rec["cochran_q"] = {n: float(q[names.index(n)]) for n in phys}
    rec["shard_sd_over_full"] = [
        {n: float(u[:, names.index(n)].std(ddof=1) / uf[:, names.index(n)].std(ddof=1))
         for n in phys} for u in us]
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--pivots", default="0.3,3,10")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    pivots = [float(t) for t in a.pivots.split(",") if t]
    recs = []
    for d in a.dirs:
        r = analyse(d, pivots)
        recs.append(r)
        fmt = lambda m: " ".join(f"{k[:6]} {v:.2f}" for k, v in m.items())
        print(f"{d}: step 5 {r['step5_coordinates']}, decor pivots D {r['decor_pivots'][0]:.3g}"
              f" gamma {r['decor_pivots'][1]:.3g}")
        print(f"  product  {fmt(r['product'])}")
        print(f"  current  {fmt(r['current'])}")
        for t, m in r["pivot"].items():
            print(f"  pivot {t:>4} {fmt(m)}")
        print(f"  decor    {fmt(r['decor'])}")
        print(f"  coords   {fmt(r['coordinate_sd_ratio'])}")
        print(f"  Q(df {r['shards'] - 1}) {fmt(r['cochran_q'])}")
        for s, m in enumerate(r["shard_sd_over_full"]):
            print(f"  shard {s}  {fmt(m)}")
    if a.json:
        json.dump(recs, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
