"""SIGINT during a fit ends it at the next safe point with KeyboardInterrupt, and leaves no
thread behind. The fit pauses at its first iteration (the library's HOMODYNE_PAUSE_AT test
hook: it waits there until a stop request, at most 10 s), so the signal arrives mid-fit
however fast the machine."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import CONFIG

CHILD = textwrap.dedent("""
    import os, sys, time
    import homodyne_hpc as hh

    def threads():
        return len(os.listdir("/proc/self/task"))

    data = hh.load_data(sys.argv[1])
    opts = dict(mode="static", parameters={"D0": 1000.0, "alpha": 0.0, "D_offset": 0.0},
                threads=2, stop_directory=sys.argv[2])
    hh.fit_nlsq(data, max_iterations=1, **opts)  # MPI, PETSc started; the pause hook is off
    before = threads()
    os.environ["HOMODYNE_PAUSE_AT"] = "nlsq_iter:1"
    try:
        hh.fit_nlsq(data, **opts)
        print("NOT INTERRUPTED", flush=True)
    except KeyboardInterrupt as e:
        print("KeyboardInterrupt:", e, flush=True)
    print("threads", before, threads(), flush=True)
""")


def test_sigint_ends_a_fit_with_keyboard_interrupt(tmp_path):
    env = dict(os.environ)
    env.pop("HOMODYNE_PAUSE_AT", None)
    child = subprocess.Popen([sys.executable, "-c", CHILD, CONFIG, str(tmp_path / "stop")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = ""
        while "paused at nlsq_iter 1" not in line:
            line = child.stderr.readline()
            assert line, "the fit ended before its first iteration's pause"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert "KeyboardInterrupt: the fit was stopped by SIGINT" in out, out + err
    # The pause ends on the stop request, not on its own 10 s limit.
    assert seconds < 10.0, seconds
    print("SIGINT to KeyboardInterrupt: %.2f s" % seconds)
    before, after = out.split("threads")[1].split()
    assert before == after, out
