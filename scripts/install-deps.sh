#!/usr/bin/env bash
# Installs every Debian (bookworm) package homodyne-hpc needs to build, test and run.
# Idempotent: does nothing (not even apt-get update) when everything is present.
# Run as root, or with sudo available.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git python3 python3-numpy python3-h5py
  python3-matplotlib python3-yaml time bc   # homodyne-plot, run_report checks, bench/run_scaling.sh
  clang-format                              # the style check of the test suite (format_check)
  # the seven required packages
  libopenmpi-dev openmpi-bin           # Open MPI
  petsc-dev                            # PETSc with TAO
  libhdf5-openmpi-dev hdf5-tools       # parallel HDF5 (+ h5dump for debugging)
  libyaml-cpp-dev                      # config reader
  libhwloc-dev hwloc                   # topology and pinning
  libgtest-dev libgmock-dev            # tests
  libbenchmark-dev                     # benchmarks
  # small well-kept libraries (see docs/architecture.md for why each)
  liblzf-dev                           # LZF filter (HDF5 filter 32000) for APS-U files
  zlib1g-dev                           # deflate of result-file chunks in threads
  libzip-dev                           # NumPy .npz result files (zip archives)
  libdeflate-dev                       # CRC-32 of .npz members (PCLMUL: ~5x zlib's)
  libfmt-dev                           # formatting
  libcli11-dev                         # command-line parsing
  nlohmann-json3-dev                   # JSON result files
  libeigen3-dev                        # small dense linear algebra (covariances)
  librandom123-dev                     # counter-based RNG streams (Philox), header-only
  # the homodyne_hpc Python module (python/, docs/python.md) and its tests
  pybind11-dev python3-pybind11 python3-dev python3-mpi4py python3-pytest
  # the emulated Slurm cluster of the `cluster` tests (scripts/cluster.sh, docs/hpc-guide.md);
  # Slurm 22.05, its PMIx plugin is in slurm-wlm-basic-plugins; scripts/cluster.sh starts its
  # own daemons (the packages' systemd services, where systemd runs, are not used)
  slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins
  iproute2 util-linux                  # ip netns / veth / bridge; nsenter, unshare, setpriv
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
