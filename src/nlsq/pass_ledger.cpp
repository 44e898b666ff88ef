#include "nlsq/pass_ledger.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/fault_injection.h"

namespace homodyne::nlsq {

std::string_view ToString(PassKind kind) {
  switch (kind) {
    case PassKind::kChi2:
      return "chi2";
    case PassKind::kNormal:
      return "normal";
    case PassKind::kChi2Batch:
      return "chi2_batch";
    case PassKind::kModel:
      return "model";
    case PassKind::kFused:
      return "fused";
    case PassKind::kData:
      return "data";
    case PassKind::kRows:
      return "row_subset";
  }
  return "?";
}

int StagePasses::total() const { return std::accumulate(by_kind.begin(), by_kind.end(), 0); }

StagePasses& PassLedger::Current() {
  std::string_view name = CurrentFaultStage();
  if (name.empty()) name = label_ != nullptr ? label_ : "fit";
  return Named(name);
}

StagePasses& PassLedger::Named(std::string_view name) {
  const auto it = std::find_if(stages_.begin(), stages_.end(),
                               [&](const StagePasses& s) { return s.stage == name; });
  if (it != stages_.end()) return *it;
  StagePasses& s = stages_.emplace_back();
  s.stage = std::string(name);
  return s;
}

void PassLedger::Count(PassKind kind, int n) {
  if (n <= 0) return;
  Current().by_kind[static_cast<std::size_t>(kind)] += n;
}

void PassLedger::CountIn(std::string_view stage, PassKind kind, int n) {
  if (n <= 0) return;
  Named(stage).by_kind[static_cast<std::size_t>(kind)] += n;
}

void PassLedger::StepAccepted() { ++Current().accepted_steps; }

int PassLedger::total() const {
  int n = 0;
  for (const StagePasses& s : stages_) n += s.total();
  return n;
}

int PassLedger::accepted_steps() const {
  int n = 0;
  for (const StagePasses& s : stages_) n += s.accepted_steps;
  return n;
}

PassLedger::Label::Label(PassLedger& ledger, const char* label)
    : ledger_(ledger), previous_(ledger.label_) {
  ledger_.label_ = label;
}

PassLedger::Label::~Label() { ledger_.label_ = previous_; }

std::string DescribePasses(const StagePasses& s) {
  std::string kinds;
  for (int k = 0; k < kNumPassKinds; ++k) {
    const int n = s.by_kind[static_cast<std::size_t>(k)];
    if (n == 0) continue;
    kinds +=
        fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, ToString(static_cast<PassKind>(k)));
  }
  std::string out = fmt::format("{} {}", s.stage, s.total());
  if (!kinds.empty()) out += fmt::format(" ({})", kinds);
  if (s.accepted_steps > 0) out += fmt::format(" for {} accepted steps", s.accepted_steps);
  return out;
}

}  // namespace homodyne::nlsq
