// The public result enums against the library's own values: every layout and quality the
// library reports has a public value spelt the same, and the CMC status names what R-hat
// cannot judge instead of calling it converged.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "api/translate.h"
#include "core/errors.h"
#include "homodyne/homodyne.h"
#include "model/parameter_layout.h"
#include "nlsq/fit_quality.h"

namespace homodyne {
namespace {

TEST(ApiEnums, EveryLayoutTheLibraryReportsHasAPublicValue) {
  for (const model::ScalingLayout internal :
       {model::ScalingLayout::kIndividual, model::ScalingLayout::kAveraged,
        model::ScalingLayout::kFixedConstant, model::ScalingLayout::kConstantAveraged,
        model::ScalingLayout::kFourier}) {
    const std::string text(model::ToString(internal));
    const ScalingLayout layout = api::ParseScalingLayout(text);
    EXPECT_EQ(ToString(layout), text);
  }
  EXPECT_THROW(api::ParseScalingLayout("sideways"), Error);
}

TEST(ApiEnums, EveryQualityTheLibraryReportsHasAPublicValue) {
  for (const nlsq::FitQuality internal :
       {nlsq::FitQuality::kGood, nlsq::FitQuality::kAcceptable, nlsq::FitQuality::kPoor}) {
    const std::string text(nlsq::ToString(internal));
    EXPECT_EQ(ToString(api::ParseFitQuality(text)), text);
  }
  EXPECT_EQ(api::ParseFitQuality(""), FitQuality::kNotAssessed);
  EXPECT_THROW(api::ParseFitQuality("splendid"), Error);
}

TEST(ApiEnums, StatusAndOptionSpellings) {
  EXPECT_EQ(ToString(NlsqStatus::kConverged), "converged");
  EXPECT_EQ(ToString(NlsqStatus::kMaxIterations), "max_iter");
  EXPECT_EQ(ToString(NlsqStatus::kStalled), "stalled");
  EXPECT_EQ(ToString(NlsqStatus::kFailed), "failed");
  EXPECT_EQ(ToString(PerAngleScaling::kAuto), "auto");
  EXPECT_EQ(ToString(PerAngleScaling::kIndividual), "individual");
  EXPECT_EQ(ToString(PerAngleScaling::kConstant), "constant");
  EXPECT_EQ(ToString(PerAngleScaling::kFourier), "fourier");
  EXPECT_EQ(ToString(CmcStatus::kConverged), "converged");
  EXPECT_EQ(ToString(CmcStatus::kNotConverged), "not_converged");
  EXPECT_EQ(ToString(CmcStatus::kUnchecked), "unchecked");
}

std::vector<cmc::ShardDiagnostics> Shards(std::vector<double> rhats) {
  std::vector<cmc::ShardDiagnostics> shards(rhats.size());
  for (std::size_t s = 0; s < rhats.size(); ++s) shards[s].max_rhat = rhats[s];
  return shards;
}

TEST(ApiEnums, CmcStatusNamesWhatRhatCannotJudge) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(api::CmcStatusOf(Shards({1.01, 1.05})), CmcStatus::kConverged);
  EXPECT_EQ(api::CmcStatusOf(Shards({1.01, 1.1})), CmcStatus::kNotConverged);
  EXPECT_EQ(api::CmcStatusOf(Shards({nan, 1.3})), CmcStatus::kNotConverged);
  // One chain per shard: R-hat is NaN; all_converged would say true, the status does not.
  EXPECT_EQ(api::CmcStatusOf(Shards({nan, nan})), CmcStatus::kUnchecked);
  EXPECT_EQ(api::CmcStatusOf(Shards({1.01, nan})), CmcStatus::kUnchecked);
  EXPECT_EQ(api::CmcStatusOf({}), CmcStatus::kUnchecked);
}

TEST(ApiEnums, CmcStatusUsesTheRunsThresholds) {
  // The configured max_per_shard_rhat (the laminar template's 1.2) and min_per_shard_ess.
  EXPECT_EQ(api::CmcStatusOf(Shards({1.01, 1.15}), 1.2, 0.0), CmcStatus::kConverged);
  EXPECT_EQ(api::CmcStatusOf(Shards({1.01, 1.2}), 1.2, 0.0), CmcStatus::kNotConverged);
  std::vector<cmc::ShardDiagnostics> shards = Shards({1.01, 1.02});
  shards[0].min_ess = 250;
  shards[1].min_ess = 40;
  EXPECT_EQ(api::CmcStatusOf(shards, 1.1, 30.0), CmcStatus::kConverged);
  EXPECT_EQ(api::CmcStatusOf(shards, 1.1, 100.0), CmcStatus::kNotConverged);
}

}  // namespace
}  // namespace homodyne
