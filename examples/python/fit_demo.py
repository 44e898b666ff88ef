"""A notebook-style tour of homodyne_hpc: load the demo data, fit it, plot the fit, run a
short CMC and print the posterior summary. Each block is a notebook cell.

    PYTHONPATH=build/python python3 examples/python/fit_demo.py            # one process
    mpiexec -n 2 env PYTHONPATH=build/python python3 examples/python/fit_demo.py

Run from the repository root (the config's data path is relative to it). Writes
fit_demo.png (override with --plot FILE).
"""
import argparse

import matplotlib

matplotlib.use("Agg")  # a file, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import homodyne_hpc as hh  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--config", default="examples/real_static.yaml")
parser.add_argument("--plot", default="fit_demo.png")
args = parser.parse_args()

try:  # with mpi4py the fits run on its world; without, MPI starts on the first fit
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
except ImportError:
    comm, rank = None, 0

# %% The data: the matrices the config selects (a real 350×350 two-time matrix).
data = hh.load_data(args.config)
if rank == 0:
    print("data: %s, %d angle(s), %d frames of %g s, q = %g 1/A"
          % (data.source, len(data.phi_deg), data.n_frames, data.dt, data.q))

# %% NLSQ: the fit `homodyne --config` runs, the same numbers.
fit = hh.fit_nlsq(config=args.config, comm=comm)
if rank == 0:
    print(fit.report())

# %% The fit next to the data: one row of the two-time matrix and the diagonal cut.
if rank == 0:
    names = hh.parameter_names("static")
    model = hh.model_c2("static", [fit.parameters[n]["value"] for n in names], data.phi_deg,
                        q=data.q, dt=data.dt, n_frames=data.n_frames, contrast=fit.contrast,
                        offset=fit.offset)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    axes[0].imshow(data.c2[0], origin="lower", cmap="viridis")
    axes[0].set_title("c2 data")
    axes[1].imshow(model[0], origin="lower", cmap="viridis")
    axes[1].set_title("c2 fit (%s)" % fit.status)
    lag = np.arange(1, data.n_frames // 2)
    t0 = data.n_frames // 4
    axes[2].plot(lag * data.dt, data.c2[0, t0, t0 + lag], ".", ms=3, label="data")
    axes[2].plot(lag * data.dt, model[0, t0, t0 + lag], "-", label="fit")
    axes[2].set_xlabel("t2 - t1 [s]")
    axes[2].set_title("row t1 = %g s" % (t0 * data.dt))
    axes[2].legend()
    fig.tight_layout()
    fig.savefig(args.plot, dpi=100)
    print("plot: %s" % args.plot)

# %% A short CMC on the first 120 frames, started from the NLSQ answer. On this matrix the
# data constrain D0 and D_offset only in combination (the fit's degeneracy warnings say
# so), and chains this short do not agree: expect status not_converged, reported as such.
first = hh.Data(c2=np.ascontiguousarray(data.c2[:, :120, :120]), phi_deg=data.phi_deg,
                q=data.q, dt=data.dt, source=data.source)
warm = hh.fit_nlsq(first, comm=comm, mode="static", per_angle="individual",
                   parameters=fit.values())
posterior = hh.fit_cmc(first, comm=comm, mode="static", per_angle="individual",
                       parameters=fit.values(), warm_start=warm, shards=2, chains=2,
                       warmup=200, draws=200, seed=1)

# %% The posterior summary.
if rank == 0:
    print(posterior.report())
    for name, p in posterior.parameters.items():
        print("%-10s posterior %12.6g ± %-10.3g NLSQ %12.6g ± %.3g"
              % (name, p["mean"], p["std"], warm.parameters[name]["value"],
                 warm.parameters[name]["uncertainty"]))
    print("CMC status: %s (max R-hat %.3f)" % (posterior.status, posterior.max_rhat))
