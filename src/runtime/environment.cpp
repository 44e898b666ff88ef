#include "runtime/environment.h"

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/errors.h"
#include "core/petsc_module.h"
#include "io/h5_handles.h"

namespace homodyne {
namespace {

std::atomic<bool> g_environment_active{false};

// Open MPI's start-up for a job whose ranks all share one node: a process started without a
// launcher (a singleton; no ORTE or PMIx variables) or one that Open MPI's mpiexec placed
// with every other rank on its node. Such a job needs shared memory only, so the UCX and
// network transports are not initialised (pml ob1, btl self,vader: 0.1-0.3 s of
// MPI_Init_thread here), and a singleton starts no helper daemon (ess_singleton_isolated:
// about half of its MPI_Init_thread and most of MPI_Finalize; it gives up only MPI's
// dynamic processes, which homodyne does not use). hwloc, which Open MPI and homodyne load,
// skips the PCI and I/O-device discovery (HWLOC_COMPONENTS=-pci,-linuxio) and its plugins
// for GPUs, OpenCL, PCI and libxml2 (HWLOC_PLUGINS_BLACKLIST): such a job has no use for
// device locality, and reading every PCI device's configuration space was about 40 % of a
// singleton's MPI_Init_thread here (0.03 → 0.014 s of CPU with both). A variable set in the
// environment (or on mpiexec's command line) is kept; srun's direct launch is left alone.
std::string ChooseOneNodeTransports() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const bool singleton = size == nullptr && std::getenv("PMIX_RANK") == nullptr &&
                         std::getenv("PMI_RANK") == nullptr && std::getenv("PMI_FD") == nullptr;
  const bool one_node = singleton || (size != nullptr && local != nullptr &&
                                      std::string_view(size) == std::string_view(local));
  if (!one_node) return {};
  setenv("OMPI_MCA_pml", "ob1", /*overwrite=*/0);
  setenv("OMPI_MCA_btl", "self,vader", /*overwrite=*/0);
  if (singleton) setenv("OMPI_MCA_ess_singleton_isolated", "1", /*overwrite=*/0);
  setenv("HWLOC_COMPONENTS", "-pci,-linuxio", /*overwrite=*/0);
  setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_pci,hwloc_xml_libxml",
         /*overwrite=*/0);
  return fmt::format("one-node job ({}): Open MPI pml {}, btl {}{}; hwloc components {}",
                     singleton ? "no launcher" : "every rank on this node",
                     std::getenv("OMPI_MCA_pml"), std::getenv("OMPI_MCA_btl"),
                     singleton ? fmt::format(", singleton isolated {}",
                                             std::getenv("OMPI_MCA_ess_singleton_isolated"))
                               : std::string(),
                     std::getenv("HWLOC_COMPONENTS"));
}

// MPI_Init_thread / MPI_Finalize, with HDF5 started before and shut down before them.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, bool adopt) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized && adopt) {
      // The caller (mpi4py, a host program) initialised MPI and finalises it.
      owned_ = false;
      MPI_Query_thread(&provided_);
      if (provided_ < MPI_THREAD_FUNNELED) {
        ThrowInternal("MPI was initialised without MPI_THREAD_FUNNELED support");
      }
      io::h5::Hdf5Init();
      return;
    }
    if (initialized) ThrowInternal("MPI is already initialised: create only one Environment");
    // Open MPI's own MPI-IO (OMPIO) creates a helper file under /tmp when it opens any file
    // (its shared-file-pointer component), in a collective open: where that fails on one
    // node (a full /tmp, a quota) the ranks end in different collective calls inside
    // MPI_File_open and wait for each other forever, even to read the data. ROMIO (Open MPI's
    // default on Lustre) creates nothing on open. A choice made in the environment is kept.
    setenv("OMPI_MCA_io", "^ompio", /*overwrite=*/0);
    transport_note_ = ChooseOneNodeTransports();
    io::h5::Hdf5InitBeforeMpi();
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided_) != MPI_SUCCESS) {
      ThrowInternal("MPI_Init_thread failed");
    }
    if (provided_ < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      ThrowInternal("the MPI library does not provide MPI_THREAD_FUNNELED");
    }
  }
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    io::h5::Hdf5ShutDown();
    if (owned_ && !finalized) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int provided() const { return provided_; }
  const std::string& transport_note() const { return transport_note_; }

 private:
  int provided_ = 0;
  std::string transport_note_;
  bool owned_ = true;
};

// Whether PETSc starts with MPI: when asked to, or when PETSc options reach the process (the
// command line's, PETSC_OPTIONS, an options file), so that they reach the default solver too.
// Otherwise it waits for a TAO method (core/petsc_module.h). PetscInitialize on the world is
// collective, so the ranks agree first (one small allreduce).
bool PetscAtStart(const EnvironmentOptions& options) {
  if (!options.initialize_petsc) return false;
  int wanted = options.petsc_at_start || !options.petsc_args.empty() || PetscOptionsFromOutside();
  MPI_Allreduce(MPI_IN_PLACE, &wanted, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return wanted != 0;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// MPI_Init_thread, timed: a member initialised first so that the timing covers it.
struct TimedMpiSession {
  TimedMpiSession(int* argc, char*** argv, bool adopt, double& seconds)
      : start(std::chrono::steady_clock::now()), session(argc, argv, adopt) {
    seconds = SecondsSince(start);
  }
  std::chrono::steady_clock::time_point start;
  MpiSession session;
};

}  // namespace

struct Environment::Impl {
  Impl(int* argc, char*** argv, const EnvironmentOptions& options)
      : mpi(argc, argv, options.adopt_mpi, startup.mpi_init_seconds),
        world(MPI_COMM_WORLD),
        logger(world.rank(), options.log_level) {
    auto start = std::chrono::steady_clock::now();
    if (PetscAtStart(options)) StartPetsc(options.petsc_args, MPI_COMM_WORLD);
    startup.petsc_init_seconds = SecondsSince(start);
    start = std::chrono::steady_clock::now();
    if (options.load_topology) topology.emplace();
    startup.topology_seconds = SecondsSince(start);
    startup_notes = options.startup_notes;
  }
  // Member order = initialisation order; destruction runs in reverse.
  StartupTimes startup;  // first: the members below record into it
  TimedMpiSession mpi;
  Comm world;
  Logger logger;
  std::optional<Topology> topology;
  std::vector<std::string> startup_notes;
};

Environment::Environment(int* argc, char*** argv, EnvironmentOptions options) {
  if (g_environment_active.exchange(true)) {
    ThrowInternal("an Environment already exists in this process");
  }
  try {
    const double launch = SecondsSinceProcessStart();
    const auto start = std::chrono::steady_clock::now();
    impl_ = std::make_unique<Impl>(argc, argv, options);
    StartupTimes& s = impl_->startup;
    s.launch_seconds = launch;
    s.init_seconds = SecondsSince(start);
    if (options.main_entry && std::isfinite(options.process_start_to_main_seconds)) {
      s.exec_and_loading_seconds = options.process_start_to_main_seconds;
      s.before_environment_seconds =
          std::chrono::duration<double>(start - *options.main_entry).count();
    }
    fixed_costs_.Add("exec_and_loading", s.exec_and_loading_seconds);
    fixed_costs_.Add("before_environment", s.before_environment_seconds);
    fixed_costs_.Add("mpi_init", s.mpi_init_seconds);
    fixed_costs_.Add("petsc_init", s.petsc_init_seconds);
    fixed_costs_.Add("topology", s.topology_seconds);
  } catch (...) {
    g_environment_active = false;
    throw;
  }
}

Environment::~Environment() { Shutdown(); }

ShutdownTimes Environment::Shutdown() {
  ShutdownTimes t;
  if (!impl_) return t;
  auto start = std::chrono::steady_clock::now();
  impl_->topology.reset();
  t.topology_seconds = SecondsSince(start);
  start = std::chrono::steady_clock::now();
  StopPetsc();  // when this process started it, at start-up or for a TAO method
  t.petsc_finalize_seconds = SecondsSince(start);
  start = std::chrono::steady_clock::now();
  impl_.reset();
  t.mpi_finalize_seconds = SecondsSince(start);
  g_environment_active = false;
  return t;
}

bool Environment::Active() { return g_environment_active.load(); }

const Comm& Environment::world() const { return impl_->world; }
int Environment::thread_level() const { return impl_->mpi.session.provided(); }
bool Environment::petsc_initialized() const { return PetscStarted(); }
Logger& Environment::logger() { return impl_->logger; }
const std::vector<std::string>& Environment::startup_notes() const { return impl_->startup_notes; }

const StartupTimes& Environment::startup_times() const { return impl_->startup; }
FixedCosts& Environment::fixed_costs() { return fixed_costs_; }
const std::string& Environment::mpi_transport_note() const {
  return impl_->mpi.session.transport_note();
}

const Topology& Environment::topology() const {
  if (!impl_->topology) ThrowInternal("the hwloc topology was not loaded");
  return *impl_->topology;
}

SplitArguments SplitPetscArguments(int argc, const char* const* argv) {
  static constexpr std::array<std::string_view, 13> kPrefixes = {
      "-tao_",   "-ksp_", "-pc_",      "-snes_",   "-log_",    "-mat_",     "-vec_",
      "-malloc", "-info", "-options_", "-viewer_", "-fp_trap", "-on_error_"};
  SplitArguments out;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool is_petsc = false;
    if (i > 0 && arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
      for (auto prefix : kPrefixes) {
        if (arg.substr(0, prefix.size()) == prefix) is_petsc = true;
      }
    }
    if (!is_petsc) {
      out.program_args.emplace_back(arg);
      continue;
    }
    out.petsc_args.emplace_back(arg);
    // A value follows unless the next token is another option. Negative numbers
    // ("-1e-3") are values too.
    if (i + 1 < argc) {
      std::string_view next = argv[i + 1];
      const bool next_is_number =
          next.size() > 1 && next[0] == '-' &&
          (std::isdigit(static_cast<unsigned char>(next[1])) || next[1] == '.');
      if (!next.empty() && (next[0] != '-' || next_is_number)) {
        out.petsc_args.emplace_back(next);
        ++i;
      }
    }
  }
  return out;
}

}  // namespace homodyne
