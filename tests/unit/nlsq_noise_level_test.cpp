// The robust scale of the noise estimate from its histogram, and the quality rules on the
// noise-based reduced χ² with the misfit verdict.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/random.h"
#include "nlsq/fit_quality.h"
#include "nlsq/noise_level.h"

namespace homodyne::nlsq {
namespace {

constexpr double kNorm = 4.47213595499957939282;  // √20: third differences

// A histogram of |d| for `n` draws of d ~ N(0, (norm·σ)²), and `outliers` more at 50·norm·σ.
std::vector<std::int64_t> Histogram(double sigma, int n, int outliers, std::uint64_t seed) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(NoiseHistogramBins()), 0);
  CounterRng rng(seed, 0, 0);
  for (int i = 0; i < n; ++i) {
    ++counts[static_cast<std::size_t>(NoiseHistogramBin(std::abs(kNorm * sigma * rng.Normal())))];
  }
  for (int i = 0; i < outliers; ++i) {
    ++counts[static_cast<std::size_t>(NoiseHistogramBin(50.0 * kNorm * sigma))];
  }
  return counts;
}

TEST(NlsqNoiseLevel, HistogramScaleRecoversGaussianSigma) {
  for (double sigma : {5e-4, 2e-3, 0.072, 3.0}) {
    const double s = NoiseFromHistogram(Histogram(sigma, 200000, 0, 3), kNorm);
    EXPECT_NEAR(s / sigma, 1.0, 0.01) << sigma;
  }
}

TEST(NlsqNoiseLevel, HistogramScaleIgnoresGrossOutliers) {
  // 10 % of the differences far out (ageing a third difference does not cancel): the trimmed
  // moment leaves them out, a plain RMS would be 16× too large.
  const double s = NoiseFromHistogram(Histogram(1e-3, 100000, 10000, 4), kNorm);
  EXPECT_NEAR(s / 1e-3, 1.0, 0.1);
}

TEST(NlsqNoiseLevel, NoiseFreeAndEmptyHistogramsGiveZero) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(NoiseHistogramBins()), 0);
  EXPECT_EQ(NoiseFromHistogram(counts, kNorm), 0.0);
  counts[static_cast<std::size_t>(NoiseHistogramBin(0.0))] = 1000;  // exact differences
  counts[static_cast<std::size_t>(NoiseHistogramBin(1e-3))] = 10;
  EXPECT_EQ(NoiseFromHistogram(counts, kNorm), 0.0);
  EXPECT_EQ(NoiseHistogramBin(0.0), 0);
  EXPECT_EQ(NoiseHistogramBin(1e300), NoiseHistogramBins() - 1);
  EXPECT_LT(NoiseHistogramBin(1e-3), NoiseHistogramBin(1.01e-3 * 1.02));
}

TEST(NlsqFitQuality, NoiseBasedReducedChi2DecidesTheFlagAndTheMisfit) {
  FitQualityInput in;
  in.converged = true;
  in.noise_differences = 13680;  // 3 angles x 100 frames
  in.reduced_chi2 = 0.04;        // homodyne's σ = 0.01 on data with σ = 0.002
  in.noise_reduced_chi2 = 1.02;
  QualityAssessment q = AssessFitQuality(in);
  EXPECT_EQ(q.flag, FitQuality::kGood);
  EXPECT_TRUE(q.misfit.empty());
  EXPECT_TRUE(q.passed);

  // A wrong basin of a laminar fit (the recovery corpus, local fit alone: 1.5 × χ² of the
  // minimum), which homodyne's rule and a flag on 2 / 5 would read as good.
  in.noise_reduced_chi2 = 1.5;
  q = AssessFitQuality(in);
  EXPECT_EQ(q.flag, FitQuality::kAcceptable);
  ASSERT_EQ(q.misfit.size(), 1u);
  EXPECT_NE(q.misfit[0].find("above the noise floor"), std::string::npos) << q.misfit[0];
  EXPECT_EQ(q.misfit[0].find("far above"), std::string::npos) << q.misfit[0];
  // On tiny data the noise level itself is uncertain: the band widens (4/√n per σ²).
  EXPECT_EQ(NoiseMisfitThreshold(13680), 1.25);
  EXPECT_NEAR(NoiseMisfitThreshold(105), 1.0 + 16.0 / std::sqrt(105.0), 1e-15);
  in.noise_differences = 105;
  EXPECT_EQ(AssessFitQuality(in).flag, FitQuality::kGood);
  EXPECT_TRUE(AssessFitQuality(in).misfit.empty());
  in.noise_differences = 13680;

  in.noise_reduced_chi2 = 6.3;  // item 3 of the issue: homodyne's 0.25 read "good"
  in.reduced_chi2 = 0.25;
  q = AssessFitQuality(in);
  EXPECT_EQ(q.flag, FitQuality::kPoor);
  ASSERT_EQ(q.misfit.size(), 1u);
  EXPECT_NE(q.misfit[0].find("far above the noise floor"), std::string::npos) << q.misfit[0];
  EXPECT_FALSE(q.passed);

  // Held scaling the data contradict: poor, with its own reason.
  in.noise_reduced_chi2 = 1.1;
  in.held_scaling_gain = 2.1;
  q = AssessFitQuality(in);
  EXPECT_EQ(q.flag, FitQuality::kPoor);
  ASSERT_EQ(q.misfit.size(), 1u);
  EXPECT_NE(q.misfit[0].find("contradicted"), std::string::npos) << q.misfit[0];
  in.held_scaling_gain = 0.2;
  EXPECT_EQ(AssessFitQuality(in).flag, FitQuality::kGood);
  EXPECT_TRUE(AssessFitQuality(in).misfit.empty());

  // Unmeasured noise: homodyne's value is judged on its old rules, and the report says so.
  in = {};
  in.converged = true;
  in.reduced_chi2 = 1.5;
  in.noise_unmeasured = "angle 0: 12 third differences, fewer than 100";
  q = AssessFitQuality(in);
  EXPECT_EQ(q.flag, FitQuality::kGood);
  EXPECT_TRUE(q.misfit.empty());
  ASSERT_EQ(q.warnings.size(), 1u);
  EXPECT_NE(q.warnings[0].find("could not be measured (angle 0"), std::string::npos)
      << q.warnings[0];
}

}  // namespace
}  // namespace homodyne::nlsq
