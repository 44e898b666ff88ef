#include "config/choices.h"

#include <array>

namespace homodyne::config {

using model::LossKind;
using model::PerAngleMode;

std::span<const Choice<FitMethod>> Choices(FitMethod) {
  static constexpr std::array<Choice<FitMethod>, 4> kTable{{
      {FitMethod::kNlsq, "nlsq"},
      {FitMethod::kCmc, "cmc"},
      {FitMethod::kBoth, "both"},
      {FitMethod::kCmc, "mcmc"},  // homodyne's legacy name
  }};
  return kTable;
}

std::span<const Choice<lsq::LocalMethod>> Choices(lsq::LocalMethod) {
  using M = lsq::LocalMethod;
  static const std::array<Choice<M>, 4> kTable{{
      {M::kLm, lsq::ToString(M::kLm)},
      {M::kBnls, lsq::ToString(M::kBnls)},
      {M::kBntr, lsq::ToString(M::kBntr)},
      {M::kBntl, lsq::ToString(M::kBntl)},
  }};
  return kTable;
}

std::span<const Choice<LossKind>> Choices(LossKind) {
  static const std::array<Choice<LossKind>, 5> kTable{{
      {LossKind::kLinear, model::ToString(LossKind::kLinear)},
      {LossKind::kSoftL1, model::ToString(LossKind::kSoftL1)},
      {LossKind::kHuber, model::ToString(LossKind::kHuber)},
      {LossKind::kCauchy, model::ToString(LossKind::kCauchy)},
      {LossKind::kArctan, model::ToString(LossKind::kArctan)},
  }};
  return kTable;
}

std::span<const Choice<PerAngleMode>> Choices(PerAngleMode) {
  static constexpr std::array<Choice<PerAngleMode>, 6> kTable{{
      {PerAngleMode::kAuto, "auto"},
      {PerAngleMode::kConstant, "constant"},
      {PerAngleMode::kConstantAveraged, "constant_averaged"},
      {PerAngleMode::kIndividual, "individual"},
      {PerAngleMode::kFourier, "fourier"},
      {PerAngleMode::kIndividual, "independent"},  // xpcsjax's deprecated name
  }};
  return kTable;
}

std::span<const Choice<HierarchicalTrigger>> Choices(HierarchicalTrigger) {
  static constexpr std::array<Choice<HierarchicalTrigger>, 2> kTable{{
      {HierarchicalTrigger::kSuspect, "suspect"},
      {HierarchicalTrigger::kAlways, "always"},
  }};
  return kTable;
}

std::span<const Choice<StallRecovery>> Choices(StallRecovery) {
  static constexpr std::array<Choice<StallRecovery>, 3> kTable{{
      {StallRecovery::kRestarts, "restarts"},
      {StallRecovery::kCmaes, "cmaes"},
      {StallRecovery::kNone, "none"},
  }};
  return kTable;
}

std::span<const Choice<MirrorCheck>> Choices(MirrorCheck) {
  static constexpr std::array<Choice<MirrorCheck>, 3> kTable{{
      {MirrorCheck::kAuto, "auto"},
      {MirrorCheck::kAlways, "always"},
      {MirrorCheck::kNever, "never"},
  }};
  return kTable;
}

std::span<const Choice<ShardStrategy>> Choices(ShardStrategy) {
  static constexpr std::array<Choice<ShardStrategy>, 3> kTable{{
      {ShardStrategy::kRandom, "random"},
      {ShardStrategy::kStratified, "stratified"},
      {ShardStrategy::kContiguous, "contiguous"},
  }};
  return kTable;
}

std::span<const Choice<CombinationMethod>> Choices(CombinationMethod) {
  static constexpr std::array<Choice<CombinationMethod>, 4> kTable{{
      {CombinationMethod::kRobustConsensusMc, "robust_consensus_mc"},
      {CombinationMethod::kConsensusMc, "consensus_mc"},
      {CombinationMethod::kWeightedGaussian, "weighted_gaussian"},
      {CombinationMethod::kSimpleAverage, "simple_average"},
  }};
  return kTable;
}

std::span<const Choice<OutputLayout>> Choices(OutputLayout) {
  static constexpr std::array<Choice<OutputLayout>, 3> kTable{{
      {OutputLayout::kAuto, "auto"},
      {OutputLayout::kXpcsjax, "xpcsjax"},
      {OutputLayout::kHomodyne, "homodyne"},
  }};
  return kTable;
}

std::span<const Choice<FittedDataLevel>> Choices(FittedDataLevel) {
  static constexpr std::array<Choice<FittedDataLevel>, 3> kTable{{
      {FittedDataLevel::kFull, "full"},
      {FittedDataLevel::kModel, "model"},
      {FittedDataLevel::kNone, "none"},
  }};
  return kTable;
}

// Python's level names, as homodyne's logging section takes them (read ignoring case);
// CRITICAL is our error level, the most severe one.
std::span<const Choice<LogLevel>> Choices(LogLevel) {
  static constexpr std::array<Choice<LogLevel>, 7> kTable{{
      {LogLevel::kTrace, "TRACE"},
      {LogLevel::kDebug, "DEBUG"},
      {LogLevel::kInfo, "INFO"},
      {LogLevel::kWarning, "WARNING"},
      {LogLevel::kError, "ERROR"},
      {LogLevel::kWarning, "WARN"},
      {LogLevel::kError, "CRITICAL"},
  }};
  return kTable;
}

std::span<const Choice<GradientResponse>> Choices(GradientResponse) {
  static constexpr std::array<Choice<GradientResponse>, 4> kTable{{
      {GradientResponse::kWarn, "warn"},
      {GradientResponse::kHierarchical, "hierarchical"},
      {GradientResponse::kReset, "reset"},
      {GradientResponse::kAbort, "abort"},
  }};
  return kTable;
}

std::span<const Choice<RegularizationMode>> Choices(RegularizationMode) {
  static constexpr std::array<Choice<RegularizationMode>, 6> kTable{{
      {RegularizationMode::kNone, "none"},
      {RegularizationMode::kRelative, "relative"},
      {RegularizationMode::kAbsolute, "absolute"},
      {RegularizationMode::kAuto, "auto"},
      {RegularizationMode::kTikhonov, "tikhonov"},
      {RegularizationMode::kAdaptive, "adaptive"},
  }};
  return kTable;
}

std::span<const Choice<SamplingStrategy>> Choices(SamplingStrategy) {
  static constexpr std::array<Choice<SamplingStrategy>, 2> kTable{{
      {SamplingStrategy::kLatinHypercube, "latin_hypercube"},
      {SamplingStrategy::kRandom, "random"},
  }};
  return kTable;
}

// homodyne's names, read ignoring case (the key table's rule says so).
std::span<const Choice<PriorType>> Choices(PriorType) {
  static constexpr std::array<Choice<PriorType>, 6> kTable{{
      {PriorType::kTruncatedNormal, "TruncatedNormal"},
      {PriorType::kNormal, "Normal"},
      {PriorType::kUniform, "Uniform"},
      {PriorType::kLogNormal, "LogNormal"},
      {PriorType::kHalfNormal, "HalfNormal"},
      {PriorType::kBetaScaled, "BetaScaled"},
  }};
  return kTable;
}

std::span<const Choice<CmaesPreset>> Choices(CmaesPreset) {
  static constexpr std::array<Choice<CmaesPreset>, 3> kTable{{
      {CmaesPreset::kFast, "cmaes-fast"},
      {CmaesPreset::kStandard, "cmaes"},
      {CmaesPreset::kGlobal, "cmaes-global"},
  }};
  return kTable;
}

std::span<const Choice<CmaesRestart>> Choices(CmaesRestart) {
  static constexpr std::array<Choice<CmaesRestart>, 2> kTable{{
      {CmaesRestart::kNone, "none"},
      {CmaesRestart::kBipop, "bipop"},
  }};
  return kTable;
}

// The names ValueReader::BoolOrAuto gives a true/false/auto key (YAML's booleans read).
std::span<const Choice<AutoSwitch>> Choices(AutoSwitch) {
  static constexpr std::array<Choice<AutoSwitch>, 3> kTable{{
      {AutoSwitch::kAuto, "auto"},
      {AutoSwitch::kTrue, "true"},
      {AutoSwitch::kFalse, "false"},
  }};
  return kTable;
}

std::span<const Choice<CacheStrategy>> Choices(CacheStrategy) {
  static constexpr std::array<Choice<CacheStrategy>, 2> kTable{{
      {CacheStrategy::kIntelligent, "intelligent"},
      {CacheStrategy::kNone, "none"},
  }};
  return kTable;
}

}  // namespace homodyne::config
