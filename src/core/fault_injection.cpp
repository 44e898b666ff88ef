#include "core/fault_injection.h"

#include <sys/resource.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <mpi.h>

#include "core/errors.h"

namespace homodyne {
namespace {

// The stage label of the solver phase now running (a test facility, like the variable).
const char* g_fault_stage = "";

FaultRequest ParseFault(std::string_view text) {
  FaultRequest r;
  if (text.empty() || text == "error") {
    r.kind = InjectedFault::kError;
  } else if (text == "kill") {
    r.kind = InjectedFault::kKill;
  } else if (text == "enospc") {
    r.kind = InjectedFault::kNoSpace;
  } else if (text.starts_with("slow")) {
    r.kind = InjectedFault::kSlow;
    const std::string_view f = text.substr(4);
    double factor = 10.0;
    if (!f.empty()) {
      auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), factor);
      if (ec != std::errc() || ptr != f.data() + f.size() || !(factor >= 1.0)) r.kind = {};
    }
    r.slow_factor = factor;
  }
  if (r.kind == InjectedFault::kNone) {
    // A misspelt fault in a test must not pass as "no fault".
    throw Error(ErrorKind::kInternal,
                fmt::format("{}: unknown fault '{}' (expected error, kill, enospc or slow[F])",
                            kFailureInjectionVariable, text));
  }
  return r;
}

int JobRank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int rank = 0;
  if (initialized != 0) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// Meets the immediate faults; returns the slow factor (0: none).
double Meet(std::string_view stage, int rank) {
  const char* spec = std::getenv(kFailureInjectionVariable);
  if (spec == nullptr || stage.empty()) return 0.0;
  const FaultRequest r = FaultRequested(spec, stage, rank);
  if (r.kind != InjectedFault::kNone) {
    // The tests time a fault from this line (once per process: slow scopes repeat).
    static bool announced = false;
    if (!announced) {
      announced = true;
      const char* what = r.kind == InjectedFault::kError     ? "error"
                         : r.kind == InjectedFault::kKill    ? "kill"
                         : r.kind == InjectedFault::kNoSpace ? "enospc"
                                                             : "slow";
      std::fprintf(stderr, "fault injected: %s at stage '%.*s' (rank %d)\n", what,
                   static_cast<int>(stage.size()), stage.data(), rank);
      std::fflush(stderr);
    }
  }
  switch (r.kind) {
    case InjectedFault::kNone:
      return 0.0;
    case InjectedFault::kError:
      throw Error(ErrorKind::kInternal,
                  fmt::format("injected failure at stage '{}' ({}={})", stage,
                              kFailureInjectionVariable, spec),
                  {{}, {}, rank});
    case InjectedFault::kKill:
      std::raise(SIGKILL);
      return 0.0;
    case InjectedFault::kNoSpace: {
      std::signal(SIGXFSZ, SIG_IGN);
      struct rlimit lim {};
      getrlimit(RLIMIT_FSIZE, &lim);
      lim.rlim_cur = 0;
      setrlimit(RLIMIT_FSIZE, &lim);
      return 0.0;
    }
    case InjectedFault::kSlow:
      return r.slow_factor;
  }
  return 0.0;
}

}  // namespace

FaultRequest FaultRequested(std::string_view spec, std::string_view stage, int rank) {
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view entry = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const size_t at = entry.find('@');
    if (at == std::string_view::npos || entry.substr(0, at) != stage) continue;
    std::string_view rest = entry.substr(at + 1);
    const size_t colon = rest.find(':');
    const std::string_view rank_text = rest.substr(0, colon);
    const std::string_view fault =
        colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    bool match = rank_text == "*";
    if (!match) {
      int wanted = -1;
      auto [ptr, ec] =
          std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), wanted);
      match = ec == std::errc() && ptr == rank_text.data() + rank_text.size() && wanted == rank;
    }
    if (match) return ParseFault(fault);
  }
  return {};
}

bool FailureRequested(std::string_view spec, std::string_view stage, int rank) {
  return FaultRequested(spec, stage, rank).kind != InjectedFault::kNone;
}

void MaybeInjectFailure(std::string_view stage, int rank) { Meet(stage, rank); }

void MaybeInjectFailure(std::string_view stage) {
  if (std::getenv(kFailureInjectionVariable) == nullptr) return;
  Meet(stage, JobRank());
}

FaultScope::FaultScope(std::string_view stage, int rank)
    : start_(std::chrono::steady_clock::now()) {
  slow_factor_ = Meet(stage, rank);
}

FaultScope::FaultScope(std::string_view stage) : start_(std::chrono::steady_clock::now()) {
  if (std::getenv(kFailureInjectionVariable) != nullptr) slow_factor_ = Meet(stage, JobRank());
}

FaultScope::~FaultScope() {
  if (slow_factor_ <= 1.0) return;
  const auto took = std::chrono::steady_clock::now() - start_;
  std::this_thread::sleep_for(
      std::chrono::duration_cast<std::chrono::nanoseconds>(took * (slow_factor_ - 1.0)));
}

int BlockDelayMilliseconds() {
  const char* text = std::getenv(kBlockDelayVariable);
  if (text == nullptr) return 0;
  int ms = 0;
  const std::string_view v(text);
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
  if (ec != std::errc() || ptr != v.data() + v.size() || ms < 0) {
    throw Error(ErrorKind::kInternal,
                fmt::format("{}: expected milliseconds >= 0, found '{}'", kBlockDelayVariable, v));
  }
  return ms;
}

std::string_view CurrentFaultStage() { return g_fault_stage; }

ScopedFaultStage::ScopedFaultStage(const char* stage) : previous_(g_fault_stage) {
  g_fault_stage = stage;
}

ScopedFaultStage::~ScopedFaultStage() { g_fault_stage = previous_; }

}  // namespace homodyne
