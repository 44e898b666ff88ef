#!/usr/bin/env python3
"""Lopsided faults: one rank fails, dies, runs out of disk or runs slow (docs/reliability.md).

For each phase of a job (load, initial scaling, the solver stages, CMC sampling, checkpoint
write, output write) and each fault on one rank (HOMODYNE_FAIL_AT=<stage>@<rank>:<fault>):

  error   an exception on that rank only
  kill    SIGKILL of that rank (a lost node, the OOM killer)
  enospc  that rank's writes fail from then on (its file-size limit drops to 0)
  slow    that rank takes 10 times as long over the phase's units of work

the job must either end within 10 s of the fault with one clear message, no result files
(at most run_report.yaml, which records the failure) and a `--resume` that then gives the
uninterrupted answer, or, where the fault is survivable, complete with exactly the answer of
the run without the fault. Which it must do is fixed per case (EXPECT below); enospc on a
rank that has nothing more to write is survivable, so there either is accepted.

    python3 tests/cli/fault_matrix.py BINDIR MPIEXEC            # the CI subset, 2 ranks
    python3 tests/cli/fault_matrix.py BINDIR MPIEXEC --full     # every case at 2 and 4 ranks
    ... --json results.json                                     # per-case outcome and timings
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

END_LIMIT_S = 10.0  # a failing job ends within this long after the fault
HANG_LIMIT_S = 180.0  # backstop: a case running longer is a hang

STATIC = """analysis_mode: static
analyzer_parameters:
  dt: 0.1
  scattering: {{wavevector_q: 0.0054}}
experimental_data:
  data_folder_path: {tmp}
  data_file_name: static.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.3, 0]
optimization:
  streaming:
    enable_checkpoints: true
    checkpoint_dir: {ckpt}
    checkpoint_frequency: 1
  cmc:
    backend_config: {{checkpoint_frequency: 15}}
{extra}"""

LAMINAR = """analysis_mode: laminar_flow
analyzer_parameters:
  dt: 0.1
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
experimental_data:
  data_folder_path: {tmp}
  data_file_name: laminar.h5
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [20000, -0.3, 0, 0.002, 0.1, 0.0, 2]
optimization:
  streaming:
    enable_checkpoints: true
    checkpoint_dir: {ckpt}
    checkpoint_frequency: 1
  nlsq:
    anti_degeneracy:
      per_angle_mode: individual
      hierarchical: {{trigger: always, max_outer_iterations: 2}}
{extra}"""

# job -> (config template, extra yaml under optimization:, command-line arguments, answer file)
JOBS = {
    "nlsq": (STATIC, "", [], "nlsq"),
    "laminar": (LAMINAR, "", [], "nlsq"),
    "global": (
        STATIC,
        "  nlsq:\n    cmaes: {enable: true, nlsq_warmstart: false, popsize: 6, "
        "max_generations: 6, restart_strategy: none, seed: 5}\n",
        [],
        "nlsq",
    ),
    "cmc": (
        STATIC,
        "",
        ["--method", "cmc", "--no-nlsq-warmstart", "--n-warmup", "40", "--n-samples", "40",
         "--n-chains", "2"],
        "cmc",
    ),
}

# phase -> (job, stage marked in the code)
PHASES = {
    "load": ("nlsq", "load"),
    "initial_scaling": ("nlsq", "scaling"),
    "local_fit": ("nlsq", "local"),
    "hierarchical": ("laminar", "hierarchical"),
    "global_cmaes": ("global", "global"),
    "cmc_sampling": ("cmc", "sampling"),
    "checkpoint_nlsq": ("nlsq", "checkpoint"),
    "checkpoint_cmc": ("cmc", "checkpoint"),
    "output": ("nlsq", "output"),
}
FAULTS = ["error", "kill", "enospc", "slow"]
# Rank 0 writes the checkpoints and results (the others send it their parts): a full disk
# matters there. Elsewhere the fault hits rank 1.
RANK0 = {("checkpoint_nlsq", "enospc"), ("checkpoint_cmc", "enospc"), ("output", "enospc")}
STAGING = ".homodyne-staging"


def expect(phase, fault):
    """'end', 'complete' or 'either'."""
    if fault == "slow":
        return "complete"
    if fault == "enospc":
        return "either"
    if fault == "error" and phase.startswith("checkpoint"):
        return "complete"  # a failed periodic checkpoint warns; the fit goes on
    return "end"


# The CI subset: every fault at the phases where a fault has most ways to go wrong.
FAST = [
    ("load", "error"), ("load", "kill"),
    ("local_fit", "error"), ("local_fit", "kill"), ("local_fit", "slow"),
    ("global_cmaes", "error"), ("cmc_sampling", "error"), ("cmc_sampling", "kill"),
    ("cmc_sampling", "slow"), ("checkpoint_nlsq", "error"), ("checkpoint_nlsq", "enospc"),
    ("checkpoint_cmc", "enospc"),
    ("checkpoint_cmc", "kill"), ("output", "error"), ("output", "enospc"), ("output", "kill"),
]


class Run:
    """One mpiexec run, its merged output line by line with arrival times."""

    def __init__(self, cmd, env):
        self.t0 = time.monotonic()
        self.lines = []
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        reader = threading.Thread(target=self._read, daemon=True)
        reader.start()
        try:
            self.code = self.proc.wait(timeout=HANG_LIMIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.code = None  # hang
        self.t_end = time.monotonic()
        reader.join(timeout=5)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def text(self):
        return "\n".join(line for _, line in self.lines)

    def first(self, needle):
        for t, line in self.lines:
            if needle in line:
                return t
        return None


def answer(outdir, kind):
    """The run's answer: NLSQ parameter values and chi2, or every CMC sample dataset."""
    if kind == "nlsq":
        with open(os.path.join(outdir, "nlsq", "parameters.json")) as f:
            d = json.load(f)
        out = {k: v["value"] for k, v in d["parameters"].items()}
        out["chi_squared"] = d["chi_squared"]
        return out
    out = {}
    with h5py.File(os.path.join(outdir, "cmc", "samples.h5"), "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset)
                     else None)
    return out


def same(a, b):
    if a.keys() != b.keys() or not a:
        return False
    return all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def leftovers(outdir, killed):
    """Files a failed run left in its output directory, besides run_report.yaml (and, after
    SIGKILL, which nothing can clean up at once, the hidden staging folder: its files never
    have result names, and the next run in the folder removes it)."""
    if not os.path.isdir(outdir):
        return []
    found = []
    for root, _, files in os.walk(outdir):
        for name in files:
            rel = os.path.relpath(os.path.join(root, name), outdir)
            if rel != "run_report.yaml" and not (killed and rel.startswith(STAGING + os.sep)):
                found.append(rel)
    return sorted(found)


class Matrix:
    def __init__(self, bindir, mpiexec, tmp):
        self.bindir, self.mpiexec, self.tmp = bindir, mpiexec, tmp
        self.references = {}
        base = dict(os.environ)
        base.pop("HOMODYNE_FAIL_AT", None)
        self.env = base
        synth = os.path.join(bindir, "homodyne-synth")
        self.config("synth_static", "nlsq")
        self.config("synth_laminar", "laminar")
        subprocess.run([synth, "--config", self.cfg_path("synth_static"), "-o",
                        os.path.join(tmp, "static.h5"), "--frames", "24", "--angles",
                        "0,60,120", "--param", "D0=30000", "--param", "alpha=-0.6",
                        "--noise", "0.003", "-q"], check=True)
        subprocess.run([synth, "--config", self.cfg_path("synth_laminar"), "-o",
                        os.path.join(tmp, "laminar.h5"), "--frames", "30", "--angles",
                        "0,45,90,135", "--param", "D0=20000", "--param", "alpha=-0.4",
                        "--param", "gamma_dot_t0=0.003", "--param", "phi0=4", "--noise",
                        "0.002", "-q"], check=True)

    def cfg_path(self, name):
        return os.path.join(self.tmp, name + ".yaml")

    def config(self, name, job):
        template, extra, _, _ = JOBS[job]
        with open(self.cfg_path(name), "w") as f:
            f.write(template.format(tmp=self.tmp, ckpt=os.path.join(self.tmp, name + ".ckpt"),
                                    extra=extra))
        return self.cfg_path(name)

    def run(self, job, name, ranks, out, fault=None, resume=False):
        _, _, args, _ = JOBS[job]
        if not resume:
            self.config(name, job)
        cmd = [self.mpiexec, "-n", str(ranks), os.path.join(self.bindir, "homodyne"),
               "--config", self.cfg_path(name), "--output-dir", out, "--threads", "1"] + args
        if job == "cmc":
            cmd += ["--cmc-num-shards", str(ranks)]
        if resume:
            cmd.append("--resume")
        env = dict(self.env)
        if fault:
            env["HOMODYNE_FAIL_AT"] = fault
        return Run(cmd, env)

    def reference(self, job, ranks):
        key = (job, ranks)
        if key not in self.references:
            name = f"ref_{job}_{ranks}"
            out = os.path.join(self.tmp, name)
            shutil.rmtree(out, ignore_errors=True)
            r = self.run(job, name, ranks, out)
            if r.code != 0:
                raise SystemExit(f"FAIL: reference run {job} at {ranks} ranks exit {r.code}\n"
                                 + r.text())
            self.references[key] = answer(out, JOBS[job][3])
        return self.references[key]

    def case(self, phase, fault, ranks):
        job, stage = PHASES[phase]
        rank = 0 if (phase, fault) in RANK0 else 1
        want = expect(phase, fault)
        ref = self.reference(job, ranks)
        name = f"{phase}_{fault}_{ranks}"
        out = os.path.join(self.tmp, name)
        shutil.rmtree(out, ignore_errors=True)
        spec = f"{stage}@{rank}:{fault}"
        r = self.run(job, name, ranks, out, fault=spec)
        res = {"phase": phase, "fault": fault, "ranks": ranks, "spec": spec, "expected": want,
               "exit_code": r.code}
        problems = []
        if r.code is None:
            problems.append(f"no end within {HANG_LIMIT_S:.0f} s (hang)")
        marker = "fault injected:"
        t_fault = r.first(marker)
        ended = r.code not in (0, None)
        res["outcome"] = "completed" if r.code == 0 else ("ended" if ended else "hang")
        if t_fault is None:
            problems.append(f"the fault was never met (no '{marker}' line)")
        if ended:
            if want == "complete":
                problems.append("ended, but this fault is survivable")
            if t_fault is None:
                t_fault = r.t0
            res["seconds_to_end"] = round(r.t_end - t_fault, 2)
            if r.t_end - t_fault > END_LIMIT_S:
                problems.append(f"ended {r.t_end - t_fault:.1f} s after the fault "
                                f"(limit {END_LIMIT_S:.0f} s)")
            text = r.text()
            if fault == "kill":
                if "signal 9" not in text:
                    problems.append("no message naming the killed rank")
            else:
                n = sum(1 for _, line in r.lines if line.startswith("error:"))
                if n != 1:
                    problems.append(f"{n} error messages (expected one)")
            left = leftovers(out, fault == "kill")
            if left:
                problems.append(f"partial results left: {left}")
            resumed = self.run(job, name, ranks, out, resume=True)
            res["resume_exit_code"] = resumed.code
            if resumed.code != 0:
                problems.append(f"--resume exit {resumed.code}:\n{resumed.text()}")
            elif not same(answer(out, JOBS[job][3]), ref):
                problems.append("--resume gave another answer than the run without the fault")
            elif os.path.exists(os.path.join(out, STAGING)):
                problems.append("the resumed run left the staging folder")
            else:
                res["resume"] = "same answer"
        elif r.code == 0:
            if want == "end":
                problems.append("completed, but the fault should have ended the job")
            res["seconds"] = round(r.t_end - r.t0, 2)
            if not same(answer(out, JOBS[job][3]), ref):
                problems.append("completed with another answer than the run without the fault")
            else:
                res["answer"] = "same answer"
        res["ok"] = not problems
        res["problems"] = problems
        return res, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bindir")
    ap.add_argument("mpiexec")
    ap.add_argument("--full", action="store_true", help="every case at 2 and 4 ranks")
    ap.add_argument("--json", help="write the per-case results here")
    ap.add_argument("--only", help="phase[:fault] to run (debugging)")
    a = ap.parse_args()
    if a.full:
        cases = [(p, f, n) for n in (2, 4) for p in PHASES for f in FAULTS]
    else:
        cases = [(p, f, 2) for p, f in FAST]
    if a.only:
        phase, _, fault = a.only.partition(":")
        cases = [c for c in cases if c[0] == phase and (not fault or c[1] == fault)]
    tmp = tempfile.mkdtemp(prefix="fault_matrix_")
    results, failed = [], 0
    try:
        m = Matrix(a.bindir, a.mpiexec, tmp)
        for phase, fault, ranks in cases:
            res, run = m.case(phase, fault, ranks)
            results.append(res)
            timing = (f"ended {res['seconds_to_end']:.1f} s after the fault, resumed: "
                      f"{res.get('resume', 'FAILED')}" if res["outcome"] == "ended"
                      else f"completed in {res.get('seconds', 0):.1f} s, "
                      f"{res.get('answer', 'OTHER ANSWER')}" if res["outcome"] == "completed"
                      else "HANG")
            status = "ok  " if res["ok"] else "FAIL"
            print(f"{status} {ranks} ranks  {phase:16s} {fault:7s} exit {res['exit_code']}: "
                  f"{timing}", flush=True)
            if not res["ok"]:
                failed += 1
                for p in res["problems"]:
                    print(f"      {p}")
                print("      --- output ---\n" + run.text()[-4000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cases": results, "end_limit_seconds": END_LIMIT_S}, f, indent=1)
    print(f"{len(results) - failed} of {len(results)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
