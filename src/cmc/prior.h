// Prior distributions of the CMC shard posteriors (physics spec §1.7–1.8: the types a
// homodyne config's parameter_space may name), with the log density and its derivative
// as NUTS needs them. Densities are unnormalised (constants dropped), which sampling
// does not need. Prior tempering for K shards (prior^(1/K)) divides the log density by K.
#pragma once

#include <string_view>

#include "config/config.h"

namespace homodyne::cmc {

// The families are the config's (the config reader reads their names, config/choices.h).
using PriorType = config::PriorType;
std::string_view ToString(PriorType type);  // the name a config gives it

struct Prior {
  PriorType type = PriorType::kUniform;
  double mu = 0.0;  // location (Normal families), log-scale location (LogNormal), mean (BetaScaled)
  double sigma = 1.0;  // scale; standard deviation for BetaScaled
  double lower = 0.0;  // support (TruncatedNormal, Uniform, BetaScaled; HalfNormal uses 0)
  double upper = 1.0;
  double temper = 1.0;  // K: the density is raised to 1/K

  // Throws a bad-input Error naming `name` if the parameters are inconsistent.
  void Validate(std::string_view name) const;
  bool InSupport(double x) const;
  // log p(x)/temper (−∞ outside the support) and its derivative.
  double LogDensity(double x) const;
  double DLogDensity(double x) const;
};

}  // namespace homodyne::cmc
