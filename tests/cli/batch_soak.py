#!/usr/bin/env python3
"""Batch soak (docs/reliability.md): `homodyne batch` with many small tasks at 2 ranks, one
in ten a bad input of a different kind.

Checks: every good task completes with exactly the answer the same config gives as a single
fit; every bad task is in batch_summary.json as failed, with the message its kind must
give and exit code 2; the batch exits 3 (some tasks failed) and nothing hangs; the peak
resident memory of the ranks is flat across the run (the last fifth of the run peaks no
higher than the first fifth, within max(4 MiB, 5 %)).

    python3 tests/cli/batch_soak.py BINDIR MPIEXEC [--tasks 200] [--json soak.json]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import h5py
import numpy as np

from fault_matrix import answer  # NLSQ values and chi2 of a result directory

BASE = """analysis_mode: static
analyzer_parameters:
  dt: {dt}
  scattering: {{wavevector_q: 0.0054}}
experimental_data:
  data_folder_path: {folder}
  data_file_name: {data}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [{d0}, {alpha}, 0]
{extra}"""

# Bad inputs, one kind after the other: (kind, what the task's config / data is, the
# message its row must carry).
BAD_KINDS = [
    ("missing_data_file", "data file not found"),
    ("not_hdf5", "not an HDF5 file"),
    ("truncated_hdf5", "truncated"),
    ("nan_in_matrix", "NaN/Inf"),
    ("zero_iterations", "max_iterations: must be >= 1"),
    ("out_of_range", "must be > 0"),
    ("wrong_type", "expected a number"),
    ("yaml_syntax", "YAML syntax error"),
    ("scaling_list_length", "expected one per angle"),
    ("end_before_start", "end_frame"),
]
N_DATASETS = 6


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rank_pids(mpiexec_pid):
    """The homodyne processes under mpiexec (its children, or their children)."""
    out = []
    try:
        kids = open(f"/proc/{mpiexec_pid}/task/{mpiexec_pid}/children").read().split()
    except OSError:
        return out
    for k in kids:
        try:
            comm = open(f"/proc/{k}/comm").read().strip()
        except OSError:
            continue
        if comm == "homodyne":
            out.append(int(k))
        else:
            out.extend(rank_pids(int(k)))
    return out


def sample_rss(proc, samples, stop):
    while not stop.is_set():
        t = time.monotonic()
        for pid in rank_pids(proc.pid):
            kib = rss_kib(pid)
            if kib:
                samples.append((t, pid, kib))
        time.sleep(0.05)


def make_inputs(tmp, bindir, n_tasks):
    """Writes the datasets, the bad inputs and one config per task; returns the tasks."""
    synth = os.path.join(bindir, "homodyne-synth")
    for i in range(N_DATASETS):
        cfg = os.path.join(tmp, "synth.yaml")
        with open(cfg, "w") as f:
            f.write(BASE.format(dt=0.1, folder=tmp, data=f"d{i}.h5", d0=20000, alpha=-0.3,
                                extra=""))
        angles = ["0,60,120", "0,90", "0,45,90,135"][i % 3]
        subprocess.run([synth, "--config", cfg, "-o", os.path.join(tmp, f"d{i}.h5"),
                        "--frames", str(24 + 4 * i), "--angles", angles, "--param",
                        f"D0={12000 + 4000 * i}", "--param", f"alpha={-0.3 - 0.05 * i}",
                        "--noise", "0.003", "--seed", str(11 + i), "-q"], check=True)
    with open(os.path.join(tmp, "not_hdf5.h5"), "w") as f:
        f.write("this is a text file, not HDF5\n")
    data = open(os.path.join(tmp, "d0.h5"), "rb").read()
    with open(os.path.join(tmp, "truncated.h5"), "wb") as f:
        f.write(data[: len(data) // 3])
    shutil.copy(os.path.join(tmp, "d0.h5"), os.path.join(tmp, "nan.h5"))
    with h5py.File(os.path.join(tmp, "nan.h5"), "r+") as f:
        names = []
        f.visititems(lambda n, o: names.append(n)
                     if isinstance(o, h5py.Dataset) and o.ndim == 2 and o.shape[0] == o.shape[1]
                     and o.shape[0] > 4 else None)
        ds = f[names[0]]
        m = ds[()]
        m[3, 7] = np.nan
        ds[...] = m

    tasks = []
    n_bad = 0
    for i in range(n_tasks):
        name = f"t{i:03d}"
        cfg = os.path.join(tmp, f"{name}.yaml")
        bad = i % 10 == 9
        fmt = dict(dt=0.1, folder=tmp, data=f"d{i % N_DATASETS}.h5",
                   d0=10000 + 1500 * (i % 7), alpha=round(-0.2 - 0.03 * (i % 5), 2), extra="")
        kind, message = None, None
        if bad:
            kind, message = BAD_KINDS[n_bad % len(BAD_KINDS)]
            n_bad += 1
            if kind == "missing_data_file":
                fmt["data"] = "nowhere.h5"
            elif kind == "not_hdf5":
                fmt["data"] = "not_hdf5.h5"
            elif kind == "truncated_hdf5":
                fmt["data"] = "truncated.h5"
            elif kind == "nan_in_matrix":
                fmt["data"] = "nan.h5"
            elif kind == "zero_iterations":
                # (An unknown key is a warning for a config file, as in homodyne.)
                fmt["extra"] = "optimization:\n  nlsq: {max_iterations: 0}\n"
            elif kind == "out_of_range":
                fmt["dt"] = -1
            elif kind == "wrong_type":
                fmt["dt"] = '"fast"'
            elif kind == "scaling_list_length":
                fmt["data"] = "d0.h5"  # 3 angles
                fmt["extra"] = ("  per_angle_scaling: {contrast: [0.5, 0.5], "
                                "offset: [1.0, 1.0]}\n")
            elif kind == "end_before_start":
                fmt["extra"] = ""
        text = BASE.format(**fmt)
        if bad and kind == "yaml_syntax":
            text = text.replace("scattering: {wavevector_q: 0.0054}",
                                "scattering: {wavevector_q: [0.0054}")
        if bad and kind == "end_before_start":
            text = text.replace("  dt: 0.1\n", "  dt: 0.1\n  start_frame: 20\n  end_frame: 5\n")
        with open(cfg, "w") as f:
            f.write(text)
        tasks.append({"name": name, "config": cfg, "bad": kind, "message": message})
    with open(os.path.join(tmp, "batch.yaml"), "w") as f:
        f.write("output_root: out\ngroup_size: 1\ndefaults: {method: nlsq}\ntasks:\n")
        for t in tasks:
            f.write(f"  - {{name: {t['name']}, config: {os.path.basename(t['config'])}}}\n")
    return tasks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bindir")
    ap.add_argument("mpiexec")
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--json")
    a = ap.parse_args()
    homodyne = os.path.join(a.bindir, "homodyne")
    tmp = tempfile.mkdtemp(prefix="batch_soak_")
    problems = []
    report = {"tasks": a.tasks}
    try:
        tasks = make_inputs(tmp, a.bindir, a.tasks)
        n_bad = sum(1 for t in tasks if t["bad"])
        report["bad_tasks"] = n_bad
        t0 = time.monotonic()
        proc = subprocess.Popen([a.mpiexec, "-n", "2", homodyne, "batch",
                                 os.path.join(tmp, "batch.yaml"), "--threads", "1", "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        samples, stop = [], threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(proc, samples, stop), daemon=True)
        sampler.start()
        try:
            output, _ = proc.communicate(timeout=1200)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
            problems.append("the batch did not end within 1200 s (hang)")
        stop.set()
        sampler.join()
        t1 = time.monotonic()
        report["batch_seconds"] = round(t1 - t0, 1)
        report["exit_code"] = proc.returncode
        if proc.returncode != 3:
            problems.append(f"batch exit code {proc.returncode} (expected 3: some tasks failed)")

        summary_path = os.path.join(tmp, "out", "batch_summary.json")
        rows = {}
        if os.path.exists(summary_path):
            summary = json.load(open(summary_path))
            rows = {r["task"]: r for r in summary["tasks"]}
        if len(rows) != len(tasks):
            problems.append(f"batch_summary.json has {len(rows)} rows for {len(tasks)} tasks")

        # Bad tasks: failed, exit 2, their message.
        for t in tasks:
            r = rows.get(t["name"])
            if t["bad"] is None or r is None:
                continue
            if r.get("status") == "ok" or r.get("exit_code") != 2:
                problems.append(f"{t['name']} ({t['bad']}): status {r.get('status')}, exit "
                                f"{r.get('exit_code')} (expected failed, 2)")
            elif t["message"] not in (r.get("error") or ""):
                problems.append(f"{t['name']} ({t['bad']}): message {r.get('error')!r} lacks "
                                f"{t['message']!r}")

        # Good tasks: the answer of the same config fitted alone.
        good = [t for t in tasks if t["bad"] is None]
        alone_seconds = 0.0
        for t in good:
            r = rows.get(t["name"])
            if r is None or r.get("exit_code") != 0:
                problems.append(f"{t['name']}: {r and r.get('status')} exit "
                                f"{r and r.get('exit_code')}: {r and r.get('error')}")
                continue
            out = os.path.join(tmp, "alone", t["name"])
            s = time.monotonic()
            alone = subprocess.run([a.mpiexec, "-n", "1", homodyne, "--config", t["config"],
                                    "--output-dir", out, "--threads", "1", "-q"],
                                   capture_output=True, text=True)
            alone_seconds += time.monotonic() - s
            if alone.returncode != 0:
                problems.append(f"{t['name']} alone: exit {alone.returncode}: {alone.stdout}"
                                f"{alone.stderr}")
                continue
            in_batch = answer(os.path.join(tmp, "out", t["name"]), "nlsq")
            if in_batch != answer(out, "nlsq"):
                problems.append(f"{t['name']}: the batch's answer differs from the fit alone")
            shutil.rmtree(out)
        report["good_tasks_compared"] = len(good)
        report["alone_seconds"] = round(alone_seconds, 1)

        # Memory: per rank process, the peak of the first and of the last fifth of the run.
        if samples:
            # Fifths of the time the rank processes were seen (MPI start-up excluded).
            s0 = min(t for t, _, _ in samples)
            span = max(t for t, _, _ in samples) - s0
            first = [kib for t, _, kib in samples if t - s0 <= span / 5]
            last = [kib for t, _, kib in samples if t - s0 >= span * 4 / 5]
            if first and last:
                p_first, p_last = max(first) / 1024, max(last) / 1024
                report["peak_rss_first_fifth_mib"] = round(p_first, 1)
                report["peak_rss_last_fifth_mib"] = round(p_last, 1)
                report["rss_samples"] = len(samples)
                if p_last > p_first + max(4.0, 0.05 * p_first):
                    problems.append(f"peak RSS grew from {p_first:.1f} MiB (first fifth) to "
                                    f"{p_last:.1f} MiB (last fifth)")
            else:
                problems.append("too few memory samples")
        else:
            problems.append("no memory samples (rank processes not found)")
        if problems:
            print(output[-3000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report["problems"] = problems
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "problems"}))
    for p in problems:
        print("FAIL:", p)
    print("PASS" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
