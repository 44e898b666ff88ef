#include "checkpoint/interrupt.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

namespace homodyne::checkpoint {
namespace {

// The one piece of process-global state: a signal handler can reach nothing else.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void OnStopSignal(int sig) { g_stop_signal = sig; }

void Install(int sig, struct sigaction* old) {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, old);
}

}  // namespace

InterruptHandlers::InterruptHandlers() {
  Install(SIGTERM, &old_term_);
  Install(SIGUSR1, &old_usr1_);
}

InterruptHandlers::~InterruptHandlers() {
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
}

int LocalStopSignal() { return static_cast<int>(g_stop_signal); }
void ClearStopRequest() { g_stop_signal = 0; }
void SetStopRequest(int signal) noexcept { g_stop_signal = signal; }

bool AgreeOnStop(const Comm& comm) {
  int flag = g_stop_signal != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, comm.get());
  return flag != 0;
}

std::string ResumeMessage(const std::string& checkpoint) {
  return fmt::format(
      "interrupted by a signal: state saved in {}; run the same command again with --resume "
      "(any number of ranks) to continue (exit code 75 = checkpointed, resumable)",
      checkpoint);
}

bool PointListed(std::string_view spec, std::string_view point, std::int64_t n) {
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view entry = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const std::size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || entry.substr(0, colon) != point) continue;
    std::int64_t wanted = -1;
    const std::string_view num = entry.substr(colon + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), wanted);
    if (ec == std::errc() && ptr == num.data() + num.size() && wanted == n) return true;
  }
  return false;
}

void MaybeKill(std::string_view point, std::int64_t n) {
  const char* spec = std::getenv(kKillVariable);
  if (spec == nullptr || !PointListed(spec, point, n)) return;
  std::raise(SIGKILL);
}

void MaybeSignal(std::string_view point, std::int64_t n, int rank) {
  const char* spec = std::getenv(kSignalVariable);
  if (rank != 0 || spec == nullptr || !PointListed(spec, point, n)) return;
  std::raise(SIGUSR1);
}

void MaybePause(std::string_view point, std::int64_t n) {
  const char* spec = std::getenv(kPauseVariable);
  if (spec == nullptr || !PointListed(spec, point, n)) return;
  std::fputs(fmt::format("paused at {} {}\n", point, n).c_str(), stderr);
  std::fflush(stderr);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kPauseSeconds);
  while (g_stop_signal == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace homodyne::checkpoint
