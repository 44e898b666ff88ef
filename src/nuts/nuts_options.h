// Options of one NUTS chain (warmup, sampling and adaptation settings).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nuts/metric_adaptation.h"

namespace homodyne::nuts {

std::string_view ToString(MetricKind kind);
// "diag" or "dense"; false for anything else.
bool MetricKindFromString(std::string_view text, MetricKind* kind);

struct NutsOptions {
  int num_warmup = 1000;       // adaptation iterations (not returned as draws); 0: no adaptation
                               // at all, ε = init_step_size exactly
  int num_samples = 1000;      // draws returned per chain, ≥ 1
  int max_tree_depth = 10;     // 1..30; cost per draw ≤ 2^depth − 1 gradients
  double target_accept = 0.8;  // δ of dual averaging, in (0, 1); higher → smaller ε
  MetricKind metric = MetricKind::kDiag;  // adapted inverse metric: diagonal or dense
  std::uint64_t seed = 0;                 // RNG key; streams are (seed, shard, chain)
  double init_step_size = 1.0;            // ε₀ > 0, finite (also sets μ = log 10ε₀)
  double jitter = 0.0;                    // ε jitter in [0, 1)
  WindowOptions windows;                  // metric-adaptation buffers (75 / 25 / 50)

  // False with a message naming the field, its value and the rule it broke.
  bool IsValid(std::string* error) const;
  // Throws kBadInput (key "nuts.<field>") when invalid.
  void Validate() const;
};

}  // namespace homodyne::nuts
