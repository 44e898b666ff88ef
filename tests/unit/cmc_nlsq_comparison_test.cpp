// The CMC posterior against its NLSQ warm start (spec: homodyne logs |μ − p|/σ > 3 as a
// disagreement): z per physical parameter, disagreement above 3, fixed parameters skipped.
#include <gtest/gtest.h>

#include <cmath>

#include "cmc/cmc_fit.h"

namespace homodyne::cmc {
namespace {

nlsq::FitReport Nlsq() {
  nlsq::FitReport f;
  f.physical_names = {"D0", "alpha", "D_offset"};
  f.physical_values = {1000.0, -0.5, 10.0};
  f.physical_uncertainties = {30.0, 0.01, 0.0};
  return f;
}

TEST(CmcNlsqComparison, ZScoresAndDisagreements) {
  const std::vector<ParameterSummary> posterior = {
      {"contrast_0", 0.2, 0.01},
      {"D0", 1000.0 + 2.0 * 50.0, 40.0},  // gap 100 over sqrt(40² + 30²) = 50: z = 2
      {"alpha", -0.45, 0.0},              // gap 0.05 over 0.01: z = 5
  };                                      // D_offset fixed: not sampled, not compared
  const std::vector<NlsqComparison> c = CompareWithNlsq(Nlsq(), posterior);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "D0");
  EXPECT_NEAR(c[0].z, 2.0, 1e-12);
  EXPECT_FALSE(c[0].disagrees);
  EXPECT_EQ(c[0].nlsq_value, 1000.0);
  EXPECT_EQ(c[0].nlsq_std, 30.0);
  EXPECT_EQ(c[1].name, "alpha");
  EXPECT_NEAR(c[1].z, 5.0, 1e-9);
  EXPECT_TRUE(c[1].disagrees);
}

TEST(CmcNlsqComparison, NoUncertaintyAtAllIsADisagreementUnlessEqual) {
  nlsq::FitReport f = Nlsq();
  const std::vector<ParameterSummary> same = {{"D_offset", 10.0, 0.0}};
  EXPECT_FALSE(CompareWithNlsq(f, same).at(0).disagrees);
  const std::vector<ParameterSummary> off = {{"D_offset", 11.0, 0.0}};
  const NlsqComparison c = CompareWithNlsq(f, off).at(0);
  EXPECT_TRUE(std::isinf(c.z));
  EXPECT_TRUE(c.disagrees);
  const std::vector<ParameterSummary> nan = {{"D_offset", std::nan(""), 1.0}};
  EXPECT_TRUE(CompareWithNlsq(f, nan).at(0).disagrees);
}

}  // namespace
}  // namespace homodyne::cmc
