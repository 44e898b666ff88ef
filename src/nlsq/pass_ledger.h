// The data passes of an NLSQ job, by pipeline stage and kind, with the solver steps each
// stage accepted: what a streamed fit pays, since each pass reads the rank's share of the
// file once.
//
// A pass belongs to the stage named by CurrentFaultStage() when it runs (the pipeline marks
// its stages there: local, phi0, restarts, global, …); outside one it belongs to the
// ledger's own label (Label: initial_scaling, report), else to "fit". Every rank counts the
// same passes (the solver is replicated), so the ledger needs no reduction.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne::nlsq {

// One pass over a rank's stream windows as the stream timed it (BlockStream::PassTimer): from
// the start of its first window's read to the end of its last window's work, the seconds
// spent waiting for the reads (whole reads, or the wait for a window read ahead), the bytes the
// reads took from the file, the windows loaded and how many of them had been read ahead.
struct StreamPassTiming {
  double seconds = 0.0;
  double read_seconds = 0.0;
  double bytes = 0.0;
  std::int64_t windows = 0;
  std::int64_t read_ahead_windows = 0;
};

enum class PassKind {
  kChi2,       // χ² at one point
  kNormal,     // χ², Jᵀr and JᵀJ at one point (a trial point's acceptance test and next step)
  kChi2Batch,  // χ² at several points
  kModel,      // the model's values: χ² per angle
  kFused,      // several of the above from one read (the report's plain χ² and χ² per angle)
  kData,  // the data alone (initial scaling's selection, noise level, digest, a row subset read)
  kRows,  // any of the above on a row subset held in memory (not a read of the data)
};
inline constexpr int kNumPassKinds = 7;
std::string_view ToString(PassKind kind);

struct StagePasses {
  std::string stage;
  std::array<int, kNumPassKinds> by_kind{};
  int accepted_steps = 0;
  int total() const;
};

class PassLedger {
 public:
  void Count(PassKind kind, int n = 1);
  // n passes of `stage` whatever stage runs (the noise level's, measured once wherever it
  // is first asked for).
  void CountIn(std::string_view stage, PassKind kind, int n = 1);
  void StepAccepted();
  // In the order of their first pass or step.
  const std::vector<StagePasses>& stages() const { return stages_; }
  int total() const;
  int accepted_steps() const;

  // Passes outside a pipeline stage are `label`'s while the scope lives.
  class Label {
   public:
    Label(PassLedger& ledger, const char* label);
    ~Label();
    Label(const Label&) = delete;
    Label& operator=(const Label&) = delete;

   private:
    PassLedger& ledger_;
    const char* previous_;
  };

 private:
  StagePasses& Current();
  StagePasses& Named(std::string_view name);
  std::vector<StagePasses> stages_;
  const char* label_ = nullptr;
};

// "n passes (a chi2, b normal, …)" for the log and messages.
std::string DescribePasses(const StagePasses& s);

}  // namespace homodyne::nlsq
