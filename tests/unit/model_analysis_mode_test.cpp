#include <gtest/gtest.h>

#include "core/errors.h"
#include "model/analysis_mode.h"
#include "model/expanded_parameters.h"
#include "model/geometry.h"

namespace homodyne::model {
namespace {

TEST(AnalysisModeTest, ParsesAllSpellingsCaseInsensitively) {
  EXPECT_EQ(ParseAnalysisMode("static"), AnalysisMode::kStatic);
  EXPECT_EQ(ParseAnalysisMode("Static_Isotropic"), AnalysisMode::kStatic);
  EXPECT_EQ(ParseAnalysisMode("STATIC_ANISOTROPIC"), AnalysisMode::kStatic);
  EXPECT_EQ(ParseAnalysisMode("laminar_flow"), AnalysisMode::kLaminarFlow);
  EXPECT_EQ(ParseAnalysisMode("Laminar_Flow"), AnalysisMode::kLaminarFlow);
}

TEST(AnalysisModeTest, TryParseGivesNulloptForUnknownModes) {
  EXPECT_EQ(TryParseAnalysisMode("LAMINAR_FLOW"), AnalysisMode::kLaminarFlow);
  EXPECT_EQ(TryParseAnalysisMode("static_isotropic"), AnalysisMode::kStatic);
  EXPECT_FALSE(TryParseAnalysisMode("laminar").has_value());
  EXPECT_FALSE(TryParseAnalysisMode("").has_value());
}

TEST(AnalysisModeTest, RejectsUnknownModeWithClearMessage) {
  try {
    ParseAnalysisMode("laminar", "analysis_mode");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("laminar_flow"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'laminar'"), std::string::npos);
    EXPECT_EQ(e.context().key, "analysis_mode");
  }
}

TEST(AnalysisModeTest, ParameterNamesAndAliases) {
  EXPECT_EQ(NumPhysicalParameters(AnalysisMode::kStatic), 3);
  EXPECT_EQ(NumPhysicalParameters(AnalysisMode::kLaminarFlow), 7);
  const std::vector<std::string> expected = {
      "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};
  EXPECT_EQ(PhysicalParameterNames(AnalysisMode::kLaminarFlow), expected);
  EXPECT_EQ(PhysicalParameterNames(AnalysisMode::kStatic),
            (std::vector<std::string>{"D0", "alpha", "D_offset"}));
  EXPECT_EQ(CanonicalParameterName("gamma_dot_0"), "gamma_dot_t0");
  EXPECT_EQ(CanonicalParameterName("gamma_dot_offset"), "gamma_dot_t_offset");
  EXPECT_EQ(CanonicalParameterName("phi_0"), "phi0");
  EXPECT_EQ(CanonicalParameterName("D0"), "D0");
  EXPECT_EQ(PhysicalParameterIndex(AnalysisMode::kLaminarFlow, "phi_0"), 6);
  EXPECT_EQ(PhysicalParameterIndex(AnalysisMode::kStatic, "phi0"), -1);
}

TEST(AnalysisModeTest, ExpandedIndexOrder) {
  ExpandedIndex idx(AnalysisMode::kLaminarFlow, 3);
  EXPECT_EQ(idx.size(), 13);
  EXPECT_EQ(idx.contrast(2), 2);
  EXPECT_EQ(idx.offset(0), 3);
  EXPECT_EQ(idx.phys(0), 6);
  const auto names = idx.Names(AnalysisMode::kLaminarFlow);
  EXPECT_EQ(names[1], "contrast_1");
  EXPECT_EQ(names[5], "offset_2");
  EXPECT_EQ(names[12], "phi0");
}

TEST(GeometryTest, PrefactorsAndValidation) {
  Geometry g{0.01, 2e6, 0.1};
  EXPECT_NO_THROW(g.Validate());
  EXPECT_DOUBLE_EQ(g.DiffusionPrefactor(), 0.5 * 1e-4 * 0.1);
  EXPECT_NEAR(g.SincPrefactor(), 318.30988618379064, 1e-10);  // qL·dt/(2π), spec §1.2 step 4
  Geometry bad{0.01, 2e6, 0.0};
  EXPECT_THROW(bad.Validate(), Error);
}

}  // namespace
}  // namespace homodyne::model
