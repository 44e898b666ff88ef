// Shard filtering before the consensus (algorithms spec §2.9, adapted to a combination that
// weighs whole shards). In order:
//   1. divergence: a shard whose divergence rate exceeds max_divergence_rate is dropped;
//      nothing left is an error;
//   2. (robust method only) outliers: per parameter, the modified z-score
//      0.6745·|m_s − median(m)|/MAD of the shard means; a shard with z ≥ 3.5 in any parameter
//      is dropped (skipped when MAD = 0; when fewer than 3 shards would remain none is
//      dropped);
//   3. (robust method only) degenerate: a shard whose variance of some parameter is below
//      1e-6 × the median variance over shards (needs ≥ 3 shards; never drops all);
//   4. heterogeneity of the kept shards on the named parameters: CV = std(shard means) /
//      max(|mean of the means|, 0.01·range); CV > max_parameter_cv is an error when
//      heterogeneity_abort (else a warning) if the shards also disagree by Cochran's Q below
//      (Q above its 0.999 quantile), else a warning saying so; CV > max_parameter_cv/2 a
//      warning. With `scatter_rule` (two_component, which homodyne's rule does not cover), the
//      shard means are judged against the shards' own posterior sds instead: Cochran's Q = Σ_s (m_s
//      − m̄)²/v_s (m̄ the 1/v_s-weighted mean) is ~χ²(K − 1) when the K shards agree; Q above its
//      0.999 quantile is the error (or warning), above its 0.99 quantile a warning. The CV scales
//      with |mean|, so it flags parameters near 0 (an exponent, an offset) whose shard posteriors
//      are wide but agree; Q does not.
// homodyne removes outliers per parameter and combines each parameter on its own; a
// combination of whole draws needs the same shards for all parameters, so a shard is dropped
// whole. homodyne's winsorising of shard variances has no counterpart for it and is not
// done.
#pragma once

#include <string>
#include <vector>

#include "cmc/consensus.h"

namespace homodyne::cmc {

struct ShardFilterOptions {
  double max_divergence_rate = 0.10;
  bool robust = true;  // combination.method robust_consensus_mc
  double max_parameter_cv = 1.0;
  bool heterogeneity_abort = true;
  bool scatter_rule = false;                  // Cochran's Q instead of the CV (step 4)
  std::vector<int> heterogeneity_parameters;  // columns checked in step 4
  std::vector<double> parameter_ranges;       // bounds width of every column
};

struct ShardRejection {
  int shard = 0;
  std::string reason;  // "divergence_rate 0.23 > 0.10", "outlier in D0 (z = 5.1)", …
};

struct ShardFilterResult {
  std::vector<bool> keep;  // per shard
  std::vector<ShardRejection> rejected;
  std::vector<std::string> warnings;  // heterogeneity warnings
  std::vector<double> parameter_cv;   // per heterogeneity parameter (NaN if < 2 shards kept)
  // Cochran's Q per heterogeneity parameter (NaN if < 2 shards kept or a shard has no
  // spread).
  std::vector<double> parameter_q;
};

// `draws[s]` are shard s's draws of the model parameters (names.size() columns);
// `divergence_rates[s]` its divergent fraction. A numerical Error when every shard is
// dropped or the heterogeneity abort triggers.
ShardFilterResult FilterShards(const std::vector<ShardDraws>& draws,
                               const std::vector<double>& divergence_rates,
                               const std::vector<std::string>& names,
                               const ShardFilterOptions& options);

}  // namespace homodyne::cmc
