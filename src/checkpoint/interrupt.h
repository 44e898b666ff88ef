// Graceful interruption (SIGTERM, SIGUSR1 → checkpoint at the next safe point, exit 75)
// and the test hooks that emulate kill -9 at a chosen point.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>

#include "parallel/comm.h"

namespace homodyne::checkpoint {

// While alive, SIGTERM and SIGUSR1 set this process's stop flag (async-signal-safe: the
// handler only stores a sig_atomic_t). The previous handlers come back on destruction.
class InterruptHandlers {
 public:
  InterruptHandlers();
  ~InterruptHandlers();
  InterruptHandlers(const InterruptHandlers&) = delete;
  InterruptHandlers& operator=(const InterruptHandlers&) = delete;

 private:
  struct sigaction old_term_ {};
  struct sigaction old_usr1_ {};
};

// The signal that set the stop flag on this rank (0: none).
int LocalStopSignal();
void ClearStopRequest();
// Sets the stop flag as a stop signal would (async-signal-safe): for callers that receive
// the request some other way (the public API's RequestStop).
void SetStopRequest(int signal) noexcept;

// Collective: true on every rank if any rank's stop flag is set (a safe point).
bool AgreeOnStop(const Comm& comm);

// The message printed when a run stops after writing `checkpoint`.
std::string ResumeMessage(const std::string& checkpoint);

// Test hooks. HOMODYNE_KILL_AT="<point>:<n>[,<point>:<n>…]": MaybeKill(point, n) raises
// SIGKILL in this process when called with a listed (point, n) — every rank reaching
// that point dies abruptly, as with kill -9. Points: nlsq_iter (accepted iteration n,
// counted over the whole fit), cmc_draw (the n-th NUTS iteration this process runs, over
// all its chains), checkpoint_write (the
// n-th write of the run, after the temporary file is complete, before the rename).
// HOMODYNE_SIGNAL_AT="<point>:<n>" (nlsq_iter or cmc_draw): MaybeSignal raises SIGUSR1 on rank 0
// only there. HOMODYNE_PAUSE_AT="<point>:<n>": MaybePause prints "paused at <point> <n>"
// on stderr and waits until a stop signal reaches this process or kPauseSeconds pass, so a
// test can deliver a real signal mid-fit however fast the fit is.
inline constexpr const char* kKillVariable = "HOMODYNE_KILL_AT";
inline constexpr const char* kSignalVariable = "HOMODYNE_SIGNAL_AT";
inline constexpr const char* kPauseVariable = "HOMODYNE_PAUSE_AT";
inline constexpr int kPauseSeconds = 10;
bool PointListed(std::string_view spec, std::string_view point, std::int64_t n);
void MaybeKill(std::string_view point, std::int64_t n);
void MaybeSignal(std::string_view point, std::int64_t n, int rank);
void MaybePause(std::string_view point, std::int64_t n);

}  // namespace homodyne::checkpoint
