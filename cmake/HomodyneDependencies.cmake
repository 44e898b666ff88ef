# Finds every external package homodyne-hpc uses (all from Debian bookworm; see
# scripts/install-deps.sh and spack.yaml) and normalises their targets.

# C for the layers; CXX (MPI's C API seen from C++, without the deprecated C++ bindings) for
# the installed library's interface, which a C++-only project can find.
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI REQUIRED COMPONENTS C CXX)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# PETSc (with TAO). Debian's PETSc.pc adds -D_FORTIFY_SOURCE=2, which warns (and with
# -Werror fails) in -O0 builds such as the sanitizer preset, so it is dropped here.
pkg_check_modules(PETSC REQUIRED IMPORTED_TARGET PETSc>=3.18)
get_target_property(_petsc_opts PkgConfig::PETSC INTERFACE_COMPILE_OPTIONS)
if(_petsc_opts)
  list(FILTER _petsc_opts EXCLUDE REGEX "_FORTIFY_SOURCE|-Wdate-time")
  set_target_properties(PkgConfig::PETSC PROPERTIES INTERFACE_COMPILE_OPTIONS "${_petsc_opts}")
endif()
get_target_property(_petsc_defs PkgConfig::PETSC INTERFACE_COMPILE_DEFINITIONS)
if(_petsc_defs)
  list(FILTER _petsc_defs EXCLUDE REGEX "_FORTIFY_SOURCE")
  set_target_properties(PkgConfig::PETSC PROPERTIES INTERFACE_COMPILE_DEFINITIONS "${_petsc_defs}")
endif()
# Treat PETSc headers as system headers so our warning flags do not apply to them.
get_target_property(_petsc_inc PkgConfig::PETSC INTERFACE_INCLUDE_DIRECTORIES)
set_target_properties(PkgConfig::PETSC PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${_petsc_inc}")

# Parallel HDF5 is mandatory: checkpoints and data loading use MPI-IO collectives.
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR
    "homodyne-hpc needs the parallel (MPI) build of HDF5, but CMake found a serial one "
    "(${HDF5_C_INCLUDE_DIRS}). Install libhdf5-openmpi-dev (Debian) or hdf5+mpi (spack).")
endif()

find_package(yaml-cpp 0.7 REQUIRED)           # target: yaml-cpp (0.7 has no namespace)
set(HOMODYNE_YAML_CPP_VERSION "${yaml-cpp_VERSION}")
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
pkg_check_modules(LZF_PC QUIET IMPORTED_TARGET liblzf)
find_library(LZF_LIBRARY NAMES lzf REQUIRED)   # LZF (HDF5 filter 32000) for APS-U files
find_path(LZF_INCLUDE_DIR NAMES lzf.h PATH_SUFFIXES liblzf REQUIRED)
# NumPy's .npz archives (zip) for the result files that homodyne users read with numpy.load:
# no NPZ library is packaged in Debian, libzip is; the .npy members are written by us.
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip>=1.6)
# The CRC-32 of the .npz members (a gigabyte per fit at 23 x 1000): libdeflate's carry-less
# multiply version runs at ~14 GB/s on this machine against zlib's ~2.7 GB/s.
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate>=1.14)
find_package(ZLIB REQUIRED)   # deflate of result-file chunks in threads (HDF5's deflate format)
find_package(fmt 9 REQUIRED)                  # formatting for logs and reports
find_package(CLI11 REQUIRED CONFIG)           # command-line parsing of the apps
find_package(nlohmann_json 3.10 REQUIRED)     # JSON result files
find_package(Eigen3 3.4 REQUIRED NO_MODULE)    # small dense linear algebra (covariances, SVD)

if(HOMODYNE_BUILD_TESTS)
  find_package(GTest REQUIRED CONFIG)
endif()
if(HOMODYNE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED CONFIG)
endif()

# MPI launcher settings shared by the CTest MPI tests and the benchmark scripts.
set(HOMODYNE_MPIEXEC "${MPIEXEC_EXECUTABLE}")
