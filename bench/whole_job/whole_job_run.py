#!/usr/bin/python3
"""Runs the whole-job benchmark of bench/whole_job/run_whole_job_bench.sh (see its header)
and writes whole_job.json: every repeat of every (size, tool, config, ranks), the medians,
and per size the speed-up of each homodyne-hpc row against the faster Python peer and the
relative χ² difference to the best peer.

The JSON is rewritten after every run, so an interrupted benchmark keeps what it measured.
Exit status: 0 when every run succeeded (skipped peers included), 1 when a run failed.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time

import yaml

N_ANGLES = 23
LAMINAR_NAMES = ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]
# The true physical parameters: homodyne-synth takes them from initial_parameters.values,
# and homodyne-hpc starts its fit there ("started at the truth").
TRUTH_VALUES = [12000.0, -0.4, 5.0, 0.003, 0.15, 0.0002, 3.0]
CONTRAST, OFFSET, NOISE, SEED = 0.3, 1.0, 0.01, 5
PEERS = ["torch_trf", "scipy_fd"]
HPC = "homodyne-hpc"


def log(msg):
    print(msg, flush=True)


# ------------------------------------------------------------------------------ configs
def base_config(data_file):
    """The laminar_flow config of every run (the `default` configuration)."""
    return {
        "analysis_mode": "laminar_flow",
        "analyzer_parameters": {
            "dt": 0.1,
            "start_frame": 1,
            "end_frame": -1,
            "scattering": {"wavevector_q": 0.0054},
            "geometry": {"stator_rotor_gap": 2000000},
        },
        "experimental_data": {
            "data_folder_path": os.path.dirname(data_file),
            "data_file_name": os.path.basename(data_file),
        },
        "phi_filtering": {"enabled": False},
        "initial_parameters": {"parameter_names": LAMINAR_NAMES, "values": TRUTH_VALUES},
        "optimization": {
            "method": "nlsq",
            "nlsq": {
                "max_iterations": 200,
                "tolerance": 1.0e-10,  # the peers' --tol default: one stopping level for all
                "anti_degeneracy": {"per_angle_mode": "individual"},
            },
        },
    }


def local_config(data_file):
    """`local`: one local fit, no stall recovery, no phi0 restarts, no hierarchical stage."""
    cfg = base_config(data_file)
    nlsq = cfg["optimization"]["nlsq"]
    nlsq["recovery"] = {"on_stall": "none", "phi0_restarts": 0}
    nlsq["anti_degeneracy"]["hierarchical"] = {"enable": False}
    return cfg


def no_fitted_data_config(data_file):
    """`default` without the fitted-data files (output.fitted_data none): the run writes its
    parameters and reports only, as a fitting peer does (the Ceres side-by-side)."""
    cfg = base_config(data_file)
    cfg["output"] = {"fitted_data": "none"}
    return cfg


CONFIGS = {"default": base_config, "local": local_config,
           "default_no_fitted_data": no_fitted_data_config}
# The configurations the whole-job benchmark runs (the others serve other benchmarks).
WHOLE_JOB_KINDS = ("default", "local")


def write_config(path, cfg, build):
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    # homodyne-config rejects unknown or misspelt keys: fail here, not in the first run.
    subprocess.run([f"{build}/apps/homodyne-config", "--validate", path], check=True,
                   stdout=subprocess.DEVNULL)


# ------------------------------------------------------------------------------ dataset
def angles_deg():
    """23 angles from -90 degrees in steps of 180/23 (all of [-90, 90))."""
    return [-90.0 + i * 180.0 / N_ANGLES for i in range(N_ANGLES)]


def make_dataset(build, data_dir, frames, threads):
    """Writes the seeded dataset, its config and <data>.truth.json; returns their record."""
    name = f"laminar_{N_ANGLES}x{frames}"
    data = os.path.join(data_dir, name + ".h5")
    configs = {}
    for kind, make in CONFIGS.items():
        configs[kind] = os.path.join(data_dir, f"{name}_{kind}.yaml")
        write_config(configs[kind], make(data), build)
    t0 = time.perf_counter()
    subprocess.run(
        [f"{build}/apps/homodyne-synth", "--config", configs["default"], "-o", data,
         "--frames", str(frames), "--angles", ",".join(f"{a:.10g}" for a in angles_deg()),
         "--contrast", str(CONTRAST), "--offset", str(OFFSET), "--noise", str(NOISE),
         "--seed", str(SEED), "--threads", str(threads), "--force", "-q"],
        check=True)
    synth_s = time.perf_counter() - t0
    truth, source = read_truth(data)
    truth_file = os.path.splitext(data)[0] + ".truth.json"
    with open(truth_file, "w") as f:
        json.dump(truth, f, indent=1)
    return {"name": name, "frames": frames, "angles": N_ANGLES, "file": data,
            "bytes": os.path.getsize(data), "synth_seconds": synth_s, "configs": configs,
            "truth_file": truth_file, "truth_source": source, "truth": truth,
            "synth": {"contrast": CONTRAST, "offset": OFFSET, "noise": NOISE, "seed": SEED}}


def read_truth(data):
    """The truth homodyne-synth stored as attributes of /homodyne_synth; else the values it
    was given (the config's initial parameters, the --contrast/--offset options)."""
    try:
        import h5py
        with h5py.File(data, "r") as f:
            a = f["homodyne_synth"].attrs
            truth = {"params": {p: float(a[p]) for p in LAMINAR_NAMES},
                     "contrast": [float(a[f"contrast_{k}"]) for k in range(N_ANGLES)],
                     "offset": [float(a[f"offset_{k}"]) for k in range(N_ANGLES)]}
        return truth, "hdf5 /homodyne_synth attributes"
    except (ImportError, KeyError, OSError) as e:
        log(f"  note: truth not read from {data} ({e}); using the values given to homodyne-synth")
        return ({"params": dict(zip(LAMINAR_NAMES, TRUTH_VALUES)),
                 "contrast": [CONTRAST] * N_ANGLES, "offset": [OFFSET] * N_ANGLES},
                "synth inputs (config values, --contrast, --offset)")


# ------------------------------------------------------------------------------ running
def run_timed(cmd, timeout, stdout_path, stderr_path=None):
    """Runs cmd with its stdout to stdout_path and its stderr to stderr_path (default: the
    same file); returns (exit code, or None on timeout; wall seconds of the whole command)."""
    with open(stdout_path, "w") as out, \
            (open(stderr_path, "w") if stderr_path else open(os.devnull)) as err:
        t0 = time.perf_counter()
        # A new session: on timeout the whole tree (mpiexec and its ranks) is killed.
        p = subprocess.Popen(cmd, stdout=out,
                             stderr=err if stderr_path else subprocess.STDOUT,
                             start_new_session=True)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            code = None
        return code, time.perf_counter() - t0


def tail(path, n=5):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:]).rstrip()
    except OSError:
        return ""


def run_hpc(a, ds, kind, ranks, rep, cores):
    threads = max(1, cores // ranks)
    run_dir = os.path.join(a.data_dir, "runs", ds["name"], f"hpc_{kind}_np{ranks}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    # Pin each rank to `threads` cores when they suffice (as bench/run_scaling.sh does):
    # without a binding mpiexec binds a rank to one core and homodyne then runs 1 thread.
    bind = (["--map-by", f"slot:PE={threads}", "--bind-to", "core"]
            if ranks * threads <= cores else ["--bind-to", "none"])
    cmd = (["mpiexec", "--oversubscribe", "-n", str(ranks)] + bind +
           [os.path.join(a.root, "bench", "rss_wrap.sh"), run_dir,
            f"{a.build}/apps/homodyne", "--config", ds["configs"][kind], "--output-dir", run_dir,
            "--threads", str(threads), "--no-autotune-cache", "-q"])
    code, wall = run_timed(cmd, a.timeout, run_dir + ".log")
    r = {"repeat": rep, "wall_s": wall, "exit_code": code, "threads_per_rank": threads}
    report_path = os.path.join(run_dir, "run_report.yaml")
    if os.path.exists(report_path):
        with open(report_path) as f:
            rep_yaml = yaml.safe_load(f)
        timing = rep_yaml.get("timing_seconds") or {}
        # Every phase the report has (max over ranks), whatever their names.
        r["phases"] = {k: float(v["max"]) for k, v in timing.items()
                       if isinstance(v, dict) and "max" in v}
        r["fit_s"] = r["phases"].get("fit")
        if isinstance(rep_yaml.get("wall_seconds"), dict):   # newer builds: own accounting
            r["report_wall_seconds"] = rep_yaml["wall_seconds"]
        status = rep_yaml.get("status") or {}
        r["report_exit_code"] = status.get("exit_code")
        r["result"] = status.get("result")
        thr = rep_yaml.get("throughput") or {}
        r["iterations"] = thr.get("iterations")
        r["data_passes"] = thr.get("data_passes")
        r["fitted_points"] = (rep_yaml.get("data") or {}).get("fitted_points")
        r["recovery_actions"] = rep_yaml.get("recovery_actions") or []
        adr = rep_yaml.get("anti_degeneracy") or {}
        # Whether the default pipeline's hierarchical stage ran, and why not.
        r["hierarchical"] = {k: adr.get(k) for k in ("hierarchical_active", "inactive_reason",
                                                     "selected", "stage_chi_squared",
                                                     "plain_chi_squared")
                             if k in adr}
    params_path = os.path.join(run_dir, "nlsq", "parameters.json")
    if os.path.exists(params_path):
        with open(params_path) as f:
            p = json.load(f)
        r["chi2"] = p.get("chi_squared")
        r["reduced_chi2"] = p.get("reduced_chi_squared")
        r["params"] = {k: v.get("value") for k, v in (p.get("parameters") or {}).items()
                       if k in LAMINAR_NAMES}
        per_angle = p.get("per_angle") or {}
        r["contrast"] = [v.get("value") for v in per_angle.get("contrast") or []]
        r["offset"] = [v.get("value") for v in per_angle.get("offset") or []]
    rss = {}
    for f in glob.glob(os.path.join(run_dir, "rss", "rank_*.kib")):
        rank = int(os.path.basename(f)[5:-4])
        with open(f) as fh:
            text = fh.read().split()
        if text and text[-1].isdigit():   # /usr/bin/time may prefix a note on a signal
            rss[rank] = int(text[-1]) / 1024.0
    if rss:
        r["peak_rss_mib_per_rank"] = [rss[k] for k in sorted(rss)]
        r["peak_rss_mib"] = max(rss.values())
    ok = (code == 0 and r.get("report_exit_code") == 0 and r.get("chi2") is not None)
    r["status"] = "ok" if ok else ("timeout" if code is None else "failed")
    if not ok:
        r["log_tail"] = tail(run_dir + ".log")
    # The fitted surfaces (nlsq/*.h5) are as large as the data: drop them, keep the rest.
    for h5 in glob.glob(os.path.join(run_dir, "**", "*.h5"), recursive=True):
        os.remove(h5)
    return r


def run_peer(a, ds, peer, rep, cores):
    run_dir = os.path.join(a.data_dir, "runs", ds["name"])
    os.makedirs(run_dir, exist_ok=True)
    rss_file = os.path.join(run_dir, f"{peer}.kib")
    out_file = os.path.join(run_dir, f"{peer}.json")
    script = os.path.join(a.peers_dir, peer + ".py")
    # The peer prints one JSON line on stdout; /usr/bin/time measures its peak RSS from
    # outside, as bench/rss_wrap.sh does for the homodyne-hpc ranks.
    cmd = ["/usr/bin/time", "-f", "%M", "-o", rss_file, "/usr/bin/python3", script,
           ds["configs"]["default"], "--x0", "truth", "--threads", str(cores),
           "--tol", repr(a.peer_tol)]
    log_file = os.path.join(run_dir, f"{peer}.log")
    if os.path.exists(rss_file):
        os.remove(rss_file)   # not the previous repeat's, should this one die early
    code, wall = run_timed(cmd, a.timeout, out_file, log_file)
    r = {"repeat": rep, "wall_s": wall, "exit_code": code, "threads": cores}
    d = None
    with open(out_file) as f:
        lines = [ln for ln in f if ln.lstrip().startswith("{")]
    if lines:
        try:
            d = json.loads(lines[-1])
        except json.JSONDecodeError as e:
            r["parse_error"] = str(e)
    if d:
        r["fit_s"] = d.get("wall_fit_s")
        # The peer's own split of its time: load, fit, and the rest (interpreter start,
        # imports, set-up, JSON) as measured from outside.
        r["phases"] = {"load": d.get("wall_load_s"), "fit": d.get("wall_fit_s")}
        for k in ("wall_total_s", "wall_process_s", "nfev", "njev", "message",
                  "optimality", "reduced_chi2", "n_residuals", "tol", "versions"):
            if k in d:
                r[k] = d[k]
        r["solver_status"] = d.get("status")   # SciPy's least_squares status (> 0: converged)
        r["chi2"] = d.get("chi2")
        r["params"] = d.get("params")
        r["peak_rss_mib_self"] = d.get("peak_rss_mib")
        r["blas_libs"] = (d.get("host") or {}).get("blas_libs")
    try:
        with open(rss_file) as f:
            text = f.read().split()
        if text and text[-1].isdigit():
            r["peak_rss_mib"] = int(text[-1]) / 1024.0
    except OSError:
        pass
    if r.get("peak_rss_mib") is None and r.get("peak_rss_mib_self") is not None:
        r["peak_rss_mib"] = r["peak_rss_mib_self"]
    ok = code == 0 and r.get("chi2") is not None
    r["status"] = "ok" if ok else ("timeout" if code is None else "failed")
    if not ok:
        r["log_tail"] = tail(log_file)
    return r


# ------------------------------------------------------------------------------ summary
def median_or_none(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def summarise_row(row):
    """Medians over the successful repeats (a failed run is kept in `runs`, not averaged)."""
    ok = [r for r in row["runs"] if r["status"] == "ok"]
    row["n_ok"] = len(ok)
    row["n_runs"] = len(row["runs"])
    if row.get("skipped"):
        row["status"] = "skipped"
    elif not row["runs"]:
        row["status"] = "pending"
    elif len(ok) == len(row["runs"]):
        row["status"] = "ok"
    elif ok:
        row["status"] = "partly failed"
    else:
        row["status"] = "failed"
    med = {}
    for key in ("wall_s", "fit_s", "peak_rss_mib", "chi2"):
        med[key] = median_or_none([r.get(key) for r in ok])
    phase_names = []
    for r in ok:
        for k in r.get("phases", {}):
            if k not in phase_names:
                phase_names.append(k)
    med["phases"] = {k: median_or_none([r.get("phases", {}).get(k) for r in ok])
                     for k in phase_names}
    row["median"] = med
    row["values"] = {key: [r.get(key) for r in row["runs"]]
                     for key in ("wall_s", "fit_s", "peak_rss_mib", "chi2", "exit_code")}


def cross_check(a, ds, rows):
    """The peers' own objective at each homodyne-hpc answer (bench/whole_job/
    peer_objective.py), stored in the row as peer_objective_chi2: one objective for both."""
    answers = {}
    for (tool, kind, r), row in rows.items():
        ok = [x for x in row["runs"] if x.get("status") == "ok" and x.get("contrast")]
        if tool == HPC and ok:
            answers[f"{kind}/{r}"] = {k: ok[0][k] for k in ("contrast", "offset", "params")}
    if not answers:
        return
    path = os.path.join(a.data_dir, "runs", ds["name"], "answers.json")
    with open(path, "w") as f:
        json.dump(answers, f)
    p = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__),
                                                         "peer_objective.py"),
                        a.peers_dir, ds["configs"]["default"], path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        log(f"  peer objective at our answers failed: {p.stderr[-500:]}")
        return
    values = json.loads(p.stdout.strip().splitlines()[-1])
    for (tool, kind, r), row in rows.items():
        if f"{kind}/{r}" in values:
            row["peer_objective_chi2"] = values[f"{kind}/{r}"]
            log(f"  peers' objective at {HPC} {kind} {r} rank(s): {row['peer_objective_chi2']:.10g}")


def compare(rows, dataset):
    """Speed-ups of the homodyne-hpc rows of one dataset against the faster peer (by median
    whole-job wall; the fit ratio uses the same peer) and χ² against the lowest-χ² peer."""
    mine = [r for r in rows if r["dataset"] == dataset]
    peers = [r for r in mine if r["tool"] in PEERS and r["median"].get("wall_s") is not None]
    res = {"dataset": dataset, "faster_peer": None, "best_chi2_peer": None, "rows": []}
    if not peers:
        res["note"] = "no successful peer run for this size"
        return res
    fast = min(peers, key=lambda r: r["median"]["wall_s"])
    best = min(peers, key=lambda r: r["median"]["chi2"])
    res.update(faster_peer=fast["tool"], faster_peer_wall_s=fast["median"]["wall_s"],
               faster_peer_fit_s=fast["median"]["fit_s"], best_chi2_peer=best["tool"],
               best_peer_chi2=best["median"]["chi2"])
    for r in mine:
        if r["tool"] != HPC or r["median"].get("wall_s") is None:
            continue
        m = r["median"]
        fit = (fast["median"]["fit_s"] / m["fit_s"]
               if m.get("fit_s") and fast["median"].get("fit_s") else None)
        b = best["median"]["chi2"]
        po = r.get("peer_objective_chi2")
        res["rows"].append({
            "config": r["config"], "ranks": r["ranks"],
            "peer_objective_chi2": po,
            "chi2_rel_diff_vs_peer_objective": (abs(m["chi2"] - po) / abs(po)
                                                if po and m.get("chi2") is not None else None),
            "speedup_whole_job": fast["median"]["wall_s"] / m["wall_s"],
            "speedup_fit": fit,
            "chi2_rel_diff_vs_best_peer": abs(m["chi2"] - b) / abs(b) if b else None,
        })
    r_sorted = res["rows"]
    r_sorted.sort(key=lambda x: (x["config"], x["ranks"]))
    return res


# ------------------------------------------------------------------------------ machine
def git_state(repo):
    """(short commit, dirty) of a git checkout; dirty: a tracked file differs from HEAD
    (untracked files are not counted)."""
    def git(*args):
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True,
                              check=False).stdout.strip()
    return git("rev-parse", "--short", "HEAD") or None, bool(
        git("status", "--porcelain", "--untracked-files=no"))


def build_info(build):
    """The build dir's source tree and its git state (the binaries may come from another
    checkout than this script, e.g. when it runs from a worktree), and homodyne --version."""
    info = {"dir": build}
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    info["source_dir"] = line.split("=", 1)[1].strip()
                elif line.startswith("CMAKE_BUILD_TYPE:"):
                    info["build_type"] = line.split("=", 1)[1].strip()
    except OSError:
        pass
    if info.get("source_dir"):
        info["source_commit"], info["source_dirty"] = git_state(info["source_dir"])
    ver = subprocess.run([f"{build}/apps/homodyne", "--version"], capture_output=True,
                         text=True, check=False).stdout.strip()
    info["version"] = ver.splitlines() if ver else None
    info["homodyne_mtime_utc"] = datetime.datetime.fromtimestamp(
        os.path.getmtime(f"{build}/apps/homodyne"), datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    return info


def machine_info(root, cores):
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass

    commit, dirty = git_state(root)
    try:
        mem_kib = int(next(l for l in open("/proc/meminfo") if l.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        mem_kib = None
    return {
        "hostname": platform.node(),
        "nproc": cores,
        "cpu_model": model,
        "mem_total_gib": round(mem_kib / 2**20, 1) if mem_kib else None,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "git_commit": commit,
        "git_dirty": dirty,
        "load_average_start": os.getloadavg(),
    }


# ------------------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the repository")
    ap.add_argument("--build", required=True, help="the build dir (apps/homodyne, ...)")
    ap.add_argument("--out", required=True, help="whole_job.json to write")
    ap.add_argument("--data-dir", required=True, help="scratch dir for data and run outputs")
    ap.add_argument("--peers-dir", required=True)
    ap.add_argument("--sizes", default="200 500 1000", help="frames per dataset")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ranks", default="1 2")
    ap.add_argument("--peer-max-frames", type=int, default=500)
    ap.add_argument("--peer-tol", type=float, default=1e-10,
                    help="the peers' --tol (ftol = xtol = gtol)")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per run")
    ap.add_argument("--command", default="", help="the command line, for the record")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split()]
    ranks_list = [int(r) for r in a.ranks.split()]
    if not sizes or a.repeats < 1 or not ranks_list:
        sys.exit("whole_job_run.py: need at least one size, one rank count and one repeat")
    # Cores this process may use; not nproc, which obeys the OMP_NUM_THREADS=1 of mpi-env.sh.
    cores = len(os.sched_getaffinity(0))

    # The peers need their dir and PyTorch (python3-torch); without either they are skipped.
    peers_reason = None
    if not os.path.isdir(a.peers_dir):
        peers_reason = f"peers dir {a.peers_dir} not found"
    elif not all(os.path.exists(os.path.join(a.peers_dir, p + ".py")) for p in PEERS):
        peers_reason = f"peer scripts missing in {a.peers_dir}"
    elif importlib.util.find_spec("torch") is None:
        peers_reason = "python3-torch is not installed"
    if peers_reason:
        log(f"note: the Python peers are skipped: {peers_reason}")

    doc = {
        "benchmark": "whole job, homodyne-hpc vs Python peers, laminar_flow NLSQ "
                     f"({N_ANGLES} angles, per-angle mode individual, started at the truth)",
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": a.command,
        "machine": machine_info(a.root, cores),
        "build": build_info(a.build),
        "settings": {
            "sizes_frames": sizes, "angles": N_ANGLES, "repeats": a.repeats,
            "ranks": ranks_list, "threads_per_rank": {r: max(1, cores // r) for r in ranks_list},
            "peer_threads": cores, "peer_max_frames": a.peer_max_frames,
            "timeout_s": a.timeout, "data_dir": a.data_dir, "peers_dir": a.peers_dir,
            "peers_skipped_reason": peers_reason,
            "configs": {
                "default": "the config as is: the default NLSQ pipeline",
                "local": "plus optimization.nlsq.recovery {on_stall: none, phi0_restarts: 0} "
                         "and optimization.nlsq.anti_degeneracy.hierarchical.enable: false",
            },
            "homodyne_command": "mpiexec --oversubscribe -n R --map-by slot:PE=T --bind-to core "
                                "bench/rss_wrap.sh DIR homodyne --config CFG --output-dir DIR "
                                "--threads T --no-autotune-cache -q",
            "peer_command": "/usr/bin/time -f %M /usr/bin/python3 PEER.py CFG --x0 truth "
                            f"--threads {cores} --tol {a.peer_tol!r}",
            "peer_tol": "SciPy least_squares ftol = xtol = gtol (the peers' default 1e-10)",
            "peer_objective": "peer_objective_chi2: scipy_fd.py's objective evaluated at the "
                              "homodyne-hpc answer (bench/whole_job/peer_objective.py)",
            "start": "homodyne-hpc: physical parameters at the truth (initial_parameters), "
                     "contrast/offset estimated from the data; peers: --x0 truth (physical "
                     "parameters, contrast and offset from <data>.truth.json)",
        },
        "datasets": [],
        "rows": [],
        "comparison": [],
    }

    def save():
        for row in doc["rows"]:
            summarise_row(row)
        doc["comparison"] = [compare(doc["rows"], ds["name"]) for ds in doc["datasets"]]
        doc["machine"]["load_average_end"] = os.getloadavg()
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, a.out)

    any_failed = False
    t_bench = time.perf_counter()
    for frames in sizes:
        log(f"dataset {N_ANGLES} angles × {frames} frames")
        ds = make_dataset(a.build, a.data_dir, frames, cores)
        doc["datasets"].append(ds)
        # The tools of one repeat, in the order they alternate.
        tools = [(HPC, kind, r) for kind in WHOLE_JOB_KINDS for r in ranks_list]
        tools += [(p, "x0 truth", 1) for p in PEERS]
        rows = {}
        for tool, kind, r in tools:
            row = {"dataset": ds["name"], "frames": frames, "tool": tool, "config": kind,
                   "ranks": r, "threads_per_rank": max(1, cores // r) if tool == HPC else cores,
                   "runs": []}
            if tool in PEERS:
                if peers_reason:
                    row["skipped"] = f"skipped: {peers_reason}"
                elif frames > a.peer_max_frames:
                    row["skipped"] = f"skipped: frames > PEER_MAX_FRAMES ({a.peer_max_frames})"
            rows[(tool, kind, r)] = row
            doc["rows"].append(row)
        save()
        for rep in range(a.repeats):
            for key, row in rows.items():
                tool, kind, r = key
                if row.get("skipped"):
                    continue
                if tool == HPC:
                    res = run_hpc(a, ds, kind, r, rep, cores)
                    label = f"{HPC} {kind} {r} rank(s)"
                else:
                    res = run_peer(a, ds, tool, rep, cores)
                    label = tool
                row["runs"].append(res)
                chi2 = res.get("chi2")
                log(f"  repeat {rep + 1}/{a.repeats} {label:28s} {res['status']:7s} "
                    f"whole {res['wall_s']:8.3f} s  fit "
                    f"{res['fit_s'] if res.get('fit_s') is not None else float('nan'):8.3f} s  "
                    f"chi2 {chi2 if chi2 is not None else float('nan'):.10g}")
                if res["status"] != "ok":
                    any_failed = True
                    why = (f"timed out after {a.timeout:g} s" if res["status"] == "timeout"
                           else f"exit code {res['exit_code']}")
                    log(f"    {why}; log tail:\n{res.get('log_tail', '')}")
                save()
        for row in rows.values():
            if row.get("skipped"):
                log(f"  {row['tool']}: {row['skipped']}")
        if not peers_reason:
            cross_check(a, ds, rows)
            save()
    doc["benchmark_seconds"] = time.perf_counter() - t_bench
    save()
    log(f"wrote {a.out} ({doc['benchmark_seconds']:.1f} s)")
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
