#!/usr/bin/python3
"""whole_job.json (bench/whole_job/whole_job_run.py) → whole_job.md and whole_job.png
beside it. Re-run it on a JSON to regenerate both:

    /usr/bin/python3 bench/whole_job/whole_job_report.py docs/bench/whole_job/DATE/whole_job.json
"""

from __future__ import annotations

import argparse
import json
import os

HPC = "homodyne-hpc"
# Pipeline order of the phases homodyne-hpc reports; phases not listed here (a newer
# build may add some) follow in the order the JSON has them.
PHASE_COLOURS = {"launch": "#9edae5", "init": "#17becf", "config": "#dbdb8d",
                 "setup": "#bcbd22", "load": "tab:orange", "initial_scaling": "tab:green",
                 "fit": "tab:red", "write_fitted_data": "tab:purple", "write_outputs": "#c5b0d5",
                 "other": "0.75"}
PHASE_ORDER = ["launch", "init", "config", "setup", "load", "initial_scaling", "fit",
               "write_fitted_data", "write_outputs"]


def fmt_s(v):
    if v is None:
        return "–"
    return f"{v:.3g} s" if v < 100 else f"{v:.0f} s"


def fmt_range(row, key):
    """Median, and the min–max over the successful repeats when there are several."""
    med = row["median"].get(key)
    vals = [r.get(key) for r in row["runs"] if r["status"] == "ok" and r.get(key) is not None]
    if med is None:
        return "–"
    if len(vals) > 1:
        return f"{fmt_s(med)} ({min(vals):.3g}–{max(vals):.3g})"
    return fmt_s(med)


def tool_label(row):
    if row["tool"] == HPC:
        return f"{HPC} {row['config']}"
    return row["tool"]


def ranks_label(row):
    if row["tool"] == HPC:
        return f"{row['ranks']} × {row['threads_per_rank']} thr"
    return f"1 proc × {row['threads_per_rank']} thr"


def dataset_label(doc, name):
    ds = next(d for d in doc["datasets"] if d["name"] == name)
    return f"{ds['angles']} × {ds['frames']}"


def phase_names(rows):
    seen = []
    for row in rows:
        for k in row["median"].get("phases", {}):
            if k not in seen:
                seen.append(k)
    known = [p for p in PHASE_ORDER if p in seen]
    return known + [p for p in seen if p not in known]


def status_note(row):
    if row["status"] == "skipped":
        return row.get("skipped", "skipped")
    if row["status"] in ("failed", "partly failed"):
        why = ", ".join("timeout" if r["status"] == "timeout" else f"exit {r.get('exit_code')}"
                        for r in row["runs"] if r["status"] != "ok")
        return f"{row['status']} ({row['n_runs'] - row['n_ok']}/{row['n_runs']}: {why})"
    return None


def build_line(doc):
    b = doc.get("build") or {}
    if not b.get("source_commit"):
        return f"binaries from {b.get('dir', '?')}"
    return (f"binaries from {b['dir']}, built from {b['source_dir']} at {b['source_commit']}"
            f"{' with uncommitted changes' if b.get('source_dirty') else ''}"
            f" (homodyne modified {b.get('homodyne_mtime_utc', '?')})")


# ------------------------------------------------------------------------------ Markdown
def markdown(doc):
    m, s = doc["machine"], doc["settings"]
    comp = {c["dataset"]: c for c in doc["comparison"]}
    lines = [
        "# Whole-job benchmark: homodyne-hpc and the Python peers",
        "",
        f"{doc['benchmark']}.",
        "",
        f"- Measured {doc['date_utc']} on {m['hostname']}: {m['nproc']} cores, {m['cpu_model']}"
        + (f", {m['mem_total_gib']} GiB" if m.get("mem_total_gib") else "")
        + f"; load average at the start {', '.join(f'{x:.2f}' for x in m['load_average_start'])}"
        + (f", at the end {', '.join(f'{x:.2f}' for x in m['load_average_end'])}"
           if m.get("load_average_end") else "") + ".",
        f"- Scripts from the repository at {m['git_commit']}"
        f"{' (with uncommitted changes)' if m['git_dirty'] else ''}; {build_line(doc)}.",
        f"- Command: `{doc['command']}`",
        f"- {s['repeats']} repeat(s), the tools alternating within each repeat; times are "
        "medians (min–max over the repeats when there are several). Every value is in "
        "whole_job.json.",
        "- *whole job*: wall time of the whole command measured from outside (mpiexec and "
        "every rank, or the Python interpreter with its imports); *fit*: homodyne-hpc's "
        "`fit` phase (max over ranks), the peers' `wall_fit_s`.",
        "- *peak RSS*: max over ranks (homodyne-hpc), of the process (peers), by /usr/bin/time.",
        f"- homodyne-hpc `default`: {s['configs']['default']}; `local`: {s['configs']['local']}.",
        f"- Start: {s['start']}.",
        "- *speed-up*: median whole-job time of the faster peer over that of the row (in "
        "brackets: the same for the fit time); χ² rel. diff.: |χ² − χ²_best peer| / χ²_best peer.",
        "- *peers' objective here*: scipy_fd.py's own χ² evaluated at the homodyne-hpc answer "
        "(bench/whole_job/peer_objective.py), relative to the row's χ²: one objective for both.",
        "",
        "| dataset | tool | ranks | whole job | fit | peak RSS | χ² | χ² rel. diff. vs best peer "
        "| peers' objective here | speed-up vs faster peer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["rows"]:
        c = comp.get(row["dataset"], {})
        note = status_note(row)
        rss = row["median"].get("peak_rss_mib")
        chi2 = row["median"].get("chi2")
        speed, rel, cross = "", "", ""
        po = row.get("peer_objective_chi2")
        if po is not None and chi2 is not None:
            cross = f"{po:.10g} ({abs(chi2 - po) / abs(po):.0e})"
        if row["tool"] == HPC:
            cr = next((x for x in c.get("rows", [])
                       if x["config"] == row["config"] and x["ranks"] == row["ranks"]), None)
            if cr:
                speed = f"{cr['speedup_whole_job']:.2f}× ({cr['speedup_fit']:.2f}× fit)" \
                    if cr.get("speedup_fit") else f"{cr['speedup_whole_job']:.2f}×"
                rel = f"{cr['chi2_rel_diff_vs_best_peer']:.1e}"
            elif row["median"].get("wall_s") is not None:
                speed = "no peer"
        elif c.get("best_peer_chi2") and chi2 is not None:
            rel = f"{abs(chi2 - c['best_peer_chi2']) / abs(c['best_peer_chi2']):.1e}"
            if row["tool"] == c.get("faster_peer"):
                speed = "(faster peer)"
        cells = [dataset_label(doc, row["dataset"]), tool_label(row), ranks_label(row)]
        if note and row["n_ok"] == 0:
            cells += [note, "", "", "", "", "", ""]
        else:
            cells += [fmt_range(row, "wall_s"), fmt_range(row, "fit_s"),
                      f"{rss:.0f} MiB" if rss is not None else "–",
                      f"{chi2:.10g}" if chi2 is not None else "–", rel, cross,
                      speed + (f" — {note}" if note else "")]
        lines.append("| " + " | ".join(cells) + " |")

    hpc_rows = [r for r in doc["rows"] if r["tool"] == HPC and r["n_ok"] > 0]
    if hpc_rows:
        names = phase_names(hpc_rows)
        lines += [
            "",
            "## homodyne-hpc by phase",
            "",
            "Medians of each phase's time (max over ranks, from run_report.yaml); *other* = "
            "whole job − the sum of the phases (MPI start-up and shut-down, process start, "
            "the parts of the run outside the timed phases).",
            "",
            "| dataset | config | ranks | whole job | " + " | ".join(names) + " | other |",
            "|---|---|---|---|" + "---|" * len(names) + "---|",
        ]
        for row in hpc_rows:
            ph = row["median"]["phases"]
            whole = row["median"]["wall_s"]
            other = whole - sum(v for v in ph.values() if v is not None)
            lines.append("| " + " | ".join(
                [dataset_label(doc, row["dataset"]), row["config"], ranks_label(row),
                 fmt_s(whole)] + [fmt_s(ph.get(n)) for n in names] + [fmt_s(other)]) + " |")

    notes = []
    for c in doc["comparison"]:
        if c.get("faster_peer"):
            notes.append(f"- {dataset_label(doc, c['dataset'])}: faster peer {c['faster_peer']} "
                         f"(whole job {fmt_s(c['faster_peer_wall_s'])}, fit "
                         f"{fmt_s(c['faster_peer_fit_s'])}); lowest χ² {c['best_chi2_peer']} "
                         f"({c['best_peer_chi2']:.10g}).")
        else:
            notes.append(f"- {dataset_label(doc, c['dataset'])}: {c.get('note', 'no peer')}.")
    blas = next((r["blas_libs"] for row in doc["rows"] for r in row["runs"]
                 if r.get("blas_libs")), None)
    if blas:
        libs = sorted({os.path.basename(p) for p in blas if "/scipy/" not in p
                       and "/numpy/" not in p})
        notes.append(f"- BLAS/LAPACK the peers loaded: {', '.join(libs) or 'bundled only'}.")
    if notes:
        lines += ["", "## Peers", ""] + notes
    lines += ["", "![whole-job time per tool and size](whole_job.png)", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ figure
def bar_label(row):
    if row["tool"] == HPC:
        return f"hpc {row['config']}\n{row['ranks']} rank{'s' if row['ranks'] > 1 else ''}"
    return row["tool"]


def figure(doc, path):
    """Top: whole-job time per tool and size (median, min–max whiskers), log axis.
    Bottom: each bar's split into phases as a share of its whole job, linear axis (phases
    stacked on a log axis would misstate their sizes). homodyne-hpc: its reported phases;
    peers (hatched): their load and fit times; "other": the rest of the whole job."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [d["name"] for d in doc["datasets"]]
    if not names:
        return
    hpc_phases = phase_names([r for r in doc["rows"] if r["tool"] == HPC and r["n_ok"] > 0])
    segments = hpc_phases + [p for p in ("load", "fit") if p not in hpc_phases] + ["other"]
    # Fixed colours for the known phases, so that "fit" looks the same in every figure;
    # other phase names take the colours left over.
    colour = dict(PHASE_COLOURS)
    spare = iter(["tab:blue", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "0.45"] * 4)
    for p in segments:
        colour.setdefault(p, next(spare))
    # Top-row colours, distinct from the phase colours of the bottom row.
    tool_colour = {"default": "#1b3a6b", "local": "#5b8cc9", "torch_trf": "#7a5230",
                   "scipy_fd": "#b08d57"}

    fig, axes = plt.subplots(2, len(names), figsize=(1.5 + 3.4 * len(names), 8.0),
                             sharey="row", sharex="col", squeeze=False,
                             gridspec_kw={"height_ratios": [3, 2]})
    totals = [r["median"]["wall_s"] for r in doc["rows"] if r["median"].get("wall_s")]
    lo = min(totals) / 3 if totals else 0.1
    hi = max(totals) * 3 if totals else 10
    for col, name in enumerate(names):
        top, bot = axes[0][col], axes[1][col]
        rows = [r for r in doc["rows"] if r["dataset"] == name]
        for x, row in enumerate(rows):
            whole = row["median"].get("wall_s")
            hatch = None if row["tool"] == HPC else "//"
            if whole is None:
                for ax, y in ((top, lo * 1.2), (bot, 2)):
                    ax.text(x, y, row["status"], rotation=90, ha="center", va="bottom",
                            fontsize=8, color="0.4")
                continue
            top.bar(x, whole, width=0.7, hatch=hatch, edgecolor="white",
                    color=tool_colour.get(row["config"] if row["tool"] == HPC else row["tool"],
                                          "0.5"))
            vals = [r["wall_s"] for r in row["runs"] if r["status"] == "ok"]
            if len(vals) > 1:
                top.errorbar(x, whole, yerr=[[whole - min(vals)], [max(vals) - whole]],
                             color="k", capsize=3, linewidth=0.8)
            top.text(x, max(vals + [whole]) * 1.08, f"{whole:.2g} s", ha="center",
                     va="bottom", fontsize=7)
            bottom = 0.0
            phases = row["median"].get("phases", {})
            for p in segments:   # the pipeline order, from the bottom up
                v = phases.get(p)
                if v:
                    bot.bar(x, 100 * v / whole, bottom=bottom, color=colour.get(p, "k"),
                            width=0.7, hatch=hatch, edgecolor="white", linewidth=0.3)
                    bottom += 100 * v / whole
            if bottom < 100:
                bot.bar(x, 100 - bottom, bottom=bottom, color=colour["other"], width=0.7,
                        hatch=hatch, edgecolor="white", linewidth=0.3)
        top.set_title(f"{dataset_label(doc, name)} (angles × frames)", fontsize=10)
        top.set_yscale("log")
        top.set_ylim(lo, hi)
        top.grid(axis="y", which="both", alpha=0.3)
        bot.set_ylim(0, 100)
        bot.grid(axis="y", alpha=0.3)
        bot.set_xticks(range(len(rows)))
        bot.set_xticklabels([bar_label(r) for r in rows], rotation=60, fontsize=8)
    axes[0][0].set_ylabel("whole-job wall time (s, median)")
    axes[1][0].set_ylabel("share of the whole job (%)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[p]) for p in segments]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="k", hatch="//"))
    fig.legend(handles, segments + ["Python peer"], loc="upper center", ncol=4, fontsize=8,
               frameon=False)
    m = doc["machine"]
    b = doc.get("build") or {}
    fig.text(0.01, 0.005, f"{m['cpu_model']}, {m['nproc']} cores; {doc['date_utc']}; "
             f"binaries {b.get('source_commit') or '?'}{'+dirty' if b.get('source_dirty') else ''}; "
             f"{doc['settings']['repeats']} repeat(s)", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.02, 1, 0.93))
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="whole_job.json")
    a = ap.parse_args()
    with open(a.json) as f:
        doc = json.load(f)
    out = os.path.dirname(os.path.abspath(a.json))
    md = markdown(doc)
    with open(os.path.join(out, "whole_job.md"), "w") as f:
        f.write(md)
    figure(doc, os.path.join(out, "whole_job.png"))
    print(md)


if __name__ == "__main__":
    main()
