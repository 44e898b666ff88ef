// Fault injection for tests of collective error handling and of lopsided faults.
//
// HOMODYNE_FAIL_AT is a comma-separated list of "<stage>@<rank>[:<fault>]" entries (e.g.
// "startup@1,load@0:kill"); the rank is the process's rank in the job, or "*" for every
// rank. Where the code marks a stage (MaybeInjectFailure, FaultScope), the listed rank meets
// the fault:
//   error (default)  an internal Error is thrown on that rank only;
//   kill             the process raises SIGKILL (a node lost, the OOM killer);
//   enospc           from then on the process cannot write past the start of any file (its
//                    file-size limit drops to 0, SIGXFSZ ignored): the writes of that rank
//                    fail with EFBIG as they would with ENOSPC on a full local disk;
//   slow             the rank takes 10 times as long over the marked unit of work (it
//                    sleeps 9 times the unit's duration at its end); "slow5" etc. set the
//                    factor.
// Unset, a mark costs one getenv and does nothing. Production runs never set it.
#pragma once

#include <chrono>
#include <string_view>

namespace homodyne {

inline constexpr const char* kFailureInjectionVariable = "HOMODYNE_FAIL_AT";

enum class InjectedFault { kNone, kError, kKill, kNoSpace, kSlow };

struct FaultRequest {
  InjectedFault kind = InjectedFault::kNone;
  double slow_factor = 10.0;
};

// What the variable's value `spec` asks for at `stage` on `rank` (kNone if nothing).
FaultRequest FaultRequested(std::string_view spec, std::string_view stage, int rank);
// True if `spec` asks for any fault at `stage` on `rank`.
bool FailureRequested(std::string_view spec, std::string_view stage, int rank);

// Meets a requested error, kill or enospc fault at `stage` (slow needs a FaultScope).
void MaybeInjectFailure(std::string_view stage, int rank);
// Same, with the process's rank in the whole job (MPI_COMM_WORLD): for stages that run
// on sub-communicators (e.g. multistart groups), whose own ranks differ from the job's.
// The only use of MPI_COMM_WORLD in the library; a test facility.
void MaybeInjectFailure(std::string_view stage);

// A marked unit of work: meets error/kill/enospc on construction and makes the unit slow
// on destruction. `stage` must outlive the scope (a literal, or CurrentFaultStage()).
class FaultScope {
 public:
  FaultScope(std::string_view stage, int rank);
  explicit FaultScope(std::string_view stage);  // the job rank
  ~FaultScope();
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;

 private:
  double slow_factor_ = 0.0;  // 0: not slow
  std::chrono::steady_clock::time_point start_;
};

// HOMODYNE_BLOCK_DELAY_MS=<ms>: every block of a data pass takes that much longer on every
// rank (0 when unset): a small test problem then has passes as long as a facility-size
// one's, to time how soon a stop request ends them.
inline constexpr const char* kBlockDelayVariable = "HOMODYNE_BLOCK_DELAY_MS";
int BlockDelayMilliseconds();

// The solver stage now running ("local", "global", …; empty outside one): the data passes
// mark it, so a fault can be aimed at one stage of the fit. Set by ScopedFaultStage.
std::string_view CurrentFaultStage();
class ScopedFaultStage {
 public:
  explicit ScopedFaultStage(const char* stage);
  ~ScopedFaultStage();
  ScopedFaultStage(const ScopedFaultStage&) = delete;
  ScopedFaultStage& operator=(const ScopedFaultStage&) = delete;

 private:
  const char* previous_;
};

}  // namespace homodyne
