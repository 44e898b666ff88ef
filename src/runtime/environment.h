// The process environment: MPI, PETSc and the hwloc topology, in one RAII object.
//
// Construct exactly one Environment at the top of main() and keep every other object
// that holds an MPI/PETSc/HDF5/hwloc handle in a scope that ends before it, so that
// nothing outlives MPI_Finalize. Initialisation order: MPI (thread level FUNNELED or
// higher) → PETSc when asked for (core/petsc_module.h; on the same world, so PETSc does
// not own MPI) → hwloc topology.
// Finalisation runs in reverse.
#pragma once

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/log.h"
#include "core/topology.h"
#include "parallel/comm.h"

namespace homodyne {

struct EnvironmentOptions {
  // Options handed to PetscInitialize (e.g. "-tao_monitor", "-tao_gatol", "1e-9").
  // PETSc never sees the rest of the command line.
  std::vector<std::string> petsc_args;
  // PETSc (core/petsc_module.h) starts with MPI only when PETSc options reach the process
  // (petsc_args, PETSC_OPTIONS, an options file) or petsc_at_start asks for it; otherwise a TAO
  // method starts it on its first solve, and a run without one never loads it.
  // initialize_petsc false: never at start-up (tiny tools).
  bool initialize_petsc = true;
  bool petsc_at_start = false;
  bool load_topology = true;
  // MPI already initialised by the caller (mpi4py, a host program): used as it is and left
  // for the caller to finalise. Without it an initialised MPI is an error.
  bool adopt_mpi = false;
  LogLevel log_level = LogLevel::kInfo;
  // Notes from start-up steps taken before the environment existed (e.g. the library
  // thread limits), for the application to log once its verbosity is known.
  std::vector<std::string> startup_notes;
  // When main() was entered and how long after the process's start (RunMpiApp sets both):
  // the launch splits into exec and loading before main() and the work before MPI starts.
  std::optional<std::chrono::steady_clock::time_point> main_entry;
  double process_start_to_main_seconds = std::nan("");
};

// Where a process's time went before its Environment was ready.
struct StartupTimes {
  double launch_seconds = 0.0;  // process start to the Environment's construction (exec, loading)
  double init_seconds = 0.0;    // MPI, PETSc and hwloc initialisation (the three below)
  // The launch's parts, when main() recorded its entry (else NaN): exec, dynamic loading and
  // static constructors; then main() up to the Environment (library thread limits, arguments).
  double exec_and_loading_seconds = std::nan("");
  double before_environment_seconds = std::nan("");
  double mpi_init_seconds = 0.0;    // HDF5's start and MPI_Init_thread
  double petsc_init_seconds = 0.0;  // PetscInitialize (≈ 0 when PETSc waits for a TAO method)
  double topology_seconds = 0.0;    // hwloc topology load (0 when not loaded)
};

// Where a process's time went after its run: measured by Environment::Shutdown.
struct ShutdownTimes {
  double topology_seconds = 0.0;  // hwloc topology destroyed
  double petsc_finalize_seconds = 0.0;
  double mpi_finalize_seconds = 0.0;  // HDF5's shutdown, the world's handles, MPI_Finalize
  double total() const { return topology_seconds + petsc_finalize_seconds + mpi_finalize_seconds; }
};

// Named costs of a job that do not go into fitting (start-up, reading, writing, shutdown),
// in the order they were added; one rank's values.
struct FixedCosts {
  std::vector<std::pair<std::string, double>> items;
  void Add(const std::string& name, double seconds) { items.emplace_back(name, seconds); }
  double total() const {
    double t = 0.0;
    for (const auto& [name, seconds] : items) t += std::isfinite(seconds) ? seconds : 0.0;
    return t;
  }
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
  // Whether PETSc is running (started at start-up or by a TAO method).
  bool petsc_initialized() const;

  // Throws if the topology was not loaded (EnvironmentOptions::load_topology).
  const Topology& topology() const;

  Logger& logger();
  const std::vector<std::string>& startup_notes() const;
  const StartupTimes& startup_times() const;
  // The Open MPI transports chosen for a one-node job before MPI started ("" when none was).
  const std::string& mpi_transport_note() const;
  // Start-up items first; the application adds the rest of its fixed costs, and RunMpiApp
  // logs them with the shutdown's once the run ends.
  FixedCosts& fixed_costs();

  // Finalises hwloc, PETSc, HDF5 and MPI in that order and says how long each took. Once
  // called, only fixed_costs() remains usable; the destructor calls it
  // when nobody did.
  ShutdownTimes Shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  FixedCosts fixed_costs_;  // outlives the Impl: logged after the shutdown
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
