// The process environment: MPI, PETSc and the hwloc topology, in one RAII object.
//
// Construct exactly one Environment at the top of main() and keep every other object
// that holds an MPI/PETSc/HDF5/hwloc handle in a scope that ends before it, so that
// nothing outlives MPI_Finalize. Initialisation order: MPI (thread level FUNNELED or
// higher) → PETSc (on the same world, so PETSc does not own MPI) → hwloc topology.
// Finalisation runs in reverse.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/topology.h"
#include "parallel/comm.h"

namespace homodyne {

struct EnvironmentOptions {
  // Options handed to PetscInitialize (e.g. "-tao_monitor", "-tao_gatol", "1e-9").
  // PETSc never sees the rest of the command line.
  std::vector<std::string> petsc_args;
  bool initialize_petsc = true;  // false: MPI (and hwloc) only, e.g. for tiny tools
  bool load_topology = true;
  // MPI already initialised by the caller (mpi4py, a host program): used as it is and left
  // for the caller to finalise. Without it an initialised MPI is an error.
  bool adopt_mpi = false;
  LogLevel log_level = LogLevel::kInfo;
  // Notes from start-up steps taken before the environment existed (e.g. the library
  // thread limits), for the application to log once its verbosity is known.
  std::vector<std::string> startup_notes;
};

// Where a process's time went before its Environment was ready.
struct StartupTimes {
  double launch_seconds = 0.0;  // process start to the Environment's construction (exec, loading)
  double init_seconds = 0.0;    // MPI, PETSc and hwloc initialisation
};

class Environment {
 public:
  Environment(int* argc, char*** argv, EnvironmentOptions options = {});
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // True between the construction and destruction of an Environment.
  static bool Active();

  const Comm& world() const;
  int rank() const { return world().rank(); }
  int size() const { return world().size(); }

  // MPI thread support level actually provided (MPI_THREAD_*).
  int thread_level() const;
  bool petsc_initialized() const;

  // Throws if the topology was not loaded (EnvironmentOptions::load_topology).
  const Topology& topology() const;

  Logger& logger();
  const std::vector<std::string>& startup_notes() const;
  const StartupTimes& startup_times() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits a command line into PETSc options (-tao_*, -ksp_*, -pc_*, -log_*, -snes_*,
// -mat_*, -vec_*, -malloc*, -info, -options_*, with the value that follows an option
// when it does not itself start with '-') and everything else, which keeps argv[0].
struct SplitArguments {
  std::vector<std::string> program_args;
  std::vector<std::string> petsc_args;
};
SplitArguments SplitPetscArguments(int argc, const char* const* argv);

}  // namespace homodyne
