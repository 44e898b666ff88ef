// NUTS treats a non-finite log density, or a finite one with a non-finite gradient, as a
// divergence: such states are never accepted and never appear among the draws.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "nuts/log_density.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"

namespace homodyne::nuts {
namespace {

// N(0, 1) restricted to |q| <= 1.5: NaN log density below −1.5, a finite log density
// with a NaN gradient above +1.5 (the model failing only in its derivatives).
class HoleyNormal final : public LogDensity {
 public:
  int dimension() const override { return 1; }
  double LogDensityGradient(std::span<const double> q, std::span<double> g) const override {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (q[0] < -1.5) {
      g[0] = 0.0;
      return nan;
    }
    g[0] = q[0] > 1.5 ? nan : -q[0];
    return -0.5 * q[0] * q[0];
  }
};

TEST(NutsNumericalFaults, NonFiniteDensityOrGradientIsADivergenceNeverADraw) {
  const HoleyNormal density;
  NutsOptions options;
  options.num_warmup = 200;
  options.num_samples = 400;
  options.seed = 5;
  const std::vector<double> init{0.3};
  NutsChain chain(density, options, init, /*shard=*/0, /*chain=*/0);
  const ChainRun run = RunChain(chain);
  ASSERT_EQ(run.draws.size(), 400u);
  int below = 0, above = 0;
  for (double q : run.draws) {
    ASSERT_TRUE(std::isfinite(q));
    EXPECT_GE(q, -1.5);
    EXPECT_LE(q, 1.5);
    below += q < -1.0 ? 1 : 0;
    above += q > 1.0 ? 1 : 0;
  }
  // The chain explored both tails (so trajectories did run into both holes) ...
  EXPECT_GT(below, 0);
  EXPECT_GT(above, 0);
  // ... and every such trajectory was flagged.
  EXPECT_GT(run.summary.num_divergent, 0);
  for (const auto& s : run.stats) EXPECT_TRUE(std::isfinite(s.accept_stat));
}

}  // namespace
}  // namespace homodyne::nuts
