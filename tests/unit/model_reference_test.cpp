// The literal reference model against the independent NumPy reference values
// (tests/data/reference_c2.json, physics spec §6).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/reference_model.h"
#include "test_data.h"

namespace homodyne::model::reference {
namespace {

nlohmann::json LoadCases() {
  std::ifstream in(testing::TestDataPath("reference_c2.json"));
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in)["cases"];
}

ModelInput InputFromCase(const nlohmann::json& c) {
  ModelInput in;
  in.mode = ParseAnalysisMode(c["mode"].get<std::string>());
  in.geometry = Geometry{c["q"].get<double>(), c["L"].get<double>(), c["dt"].get<double>()};
  in.t = c["t"].get<std::vector<double>>();
  in.phi_deg = c["phi_deg"].get<std::vector<double>>();
  in.physical = c["params"].get<std::vector<double>>();
  in.contrast = c["contrast"].get<std::vector<double>>();
  in.offset = c["offset"].get<std::vector<double>>();
  return in;
}

const nlohmann::json& CaseNamed(const nlohmann::json& cases, const std::string& prefix) {
  for (const auto& c : cases) {
    if (c["name"].get<std::string>().rfind(prefix, 0) == 0) return c;
  }
  throw std::runtime_error("no case " + prefix);
}

TEST(ReferenceModelTest, MatchesEveryElementOfEveryReferenceCase) {
  const auto cases = LoadCases();
  ASSERT_EQ(cases.size(), 7u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto ev = Evaluate(InputFromCase(c));
    const auto& c2 = c["c2"];
    ASSERT_EQ(c2.size(), ev.c2.size());
    double worst = 0.0;
    for (size_t k = 0; k < c2.size(); ++k) {
      ASSERT_EQ(static_cast<int>(c2[k].size()), ev.n);
      for (int i = 0; i < ev.n; ++i) {
        for (int j = 0; j < ev.n; ++j) {
          const double expected = c2[k][static_cast<size_t>(i)][static_cast<size_t>(j)];
          worst = std::max(worst, std::abs(ev.C2(static_cast<int>(k), i, j) - expected));
        }
      }
    }
    EXPECT_LE(worst, 1e-13);
  }
}

TEST(ReferenceModelTest, SpotValuesOfSection6) {
  const auto cases = LoadCases();
  const double tol = 1e-14;
  {
    const auto ev = Evaluate(InputFromCase(CaseNamed(cases, "A_")));
    EXPECT_NEAR(ev.C2(0, 0, 1), 1.499450302389114, tol);
    EXPECT_NEAR(ev.C2(0, 0, 3), 1.498352719507719, tol);
    for (int i = 0; i < ev.n; ++i) EXPECT_NEAR(ev.C2(0, i, i), 1.499999999995000, tol);
  }
  {
    const auto ev = Evaluate(InputFromCase(CaseNamed(cases, "B_")));
    EXPECT_NEAR(ev.C2(0, 0, 1), 1.499113005229234, tol);
    EXPECT_NEAR(ev.C2(0, 0, 3), 1.495331339253184, tol);
    EXPECT_NEAR(ev.C2(0, 2, 2), 1.499999966221274, tol);
    EXPECT_NEAR(ev.C2(2, 0, 1), 1.499450302389114, tol);  // φ = 90° equals case A
  }
  {
    const auto ev = Evaluate(InputFromCase(CaseNamed(cases, "C_")));
    EXPECT_NEAR(ev.C2(0, 0, 1), 1.139678187111765, tol);
    EXPECT_NEAR(ev.C2(0, 1, 4), 1.082605714294993, tol);
    EXPECT_NEAR(ev.C2(0, 0, 4), 1.038460721392657, tol);
    EXPECT_DOUBLE_EQ(ev.ts[0], 0.05);  // t = 0 evaluated at dt/2
  }
  {
    const auto ev = Evaluate(InputFromCase(CaseNamed(cases, "D_")));
    // φ list is −30/0/45/90, so φ=0 is angle 1.
    EXPECT_NEAR(ev.C2(1, 0, 1), 1.037191907251209, tol);
    EXPECT_NEAR(ev.C2(1, 0, 3), 1.000090038928385, tol);
    EXPECT_NEAR(ev.C2(3, 0, 1), 1.172778336648729, tol);
    // Factor by factor, φ = 0, pair (0, 3).
    const size_t e = 3;
    EXPECT_NEAR(ev.integral_d[e], 1.289703616195325e5, 1.289703616195325e5 * 1e-14);
    EXPECT_NEAR(ev.integral_g[e], 1.242303522126935e-2, 1.242303522126935e-2 * 1e-14);
    EXPECT_NEAR(ev.g1_diff[e], 0.5247402986080923, tol);
    EXPECT_NEAR(ev.shear_arg[1][e], 3.939327336882512, 3.939327336882512 * 1e-14);
    EXPECT_NEAR(ev.sinc2[1][e], 0.03301490966534298, tol);
    EXPECT_NEAR(ev.g1[1][e], 0.01732425355631127, tol);
  }
  {
    const auto ev = Evaluate(InputFromCase(CaseNamed(cases, "E_")));
    EXPECT_NEAR(ev.C2(0, 0, 3), 1.061738045281450, tol);
    EXPECT_NEAR(ev.C2(1, 0, 3), 1.269610456418041, tol);
  }
}

TEST(ReferenceModelTest, GuardsAsSpecified) {
  EXPECT_DOUBLE_EQ(TimeFloor(std::vector<double>{0.0, 0.1, 0.2}), 0.05);
  EXPECT_DOUBLE_EQ(TimeFloor(std::vector<double>{3.0}), 1e-8);
  EXPECT_DOUBLE_EQ(TimeFloor(std::vector<double>{0.0, 1e-8}), 1e-8);
  const auto f = RateOnGrid(std::vector<double>{1.0, 2.0}, 1.0, 1.0, -1.5);
  EXPECT_DOUBLE_EQ(f[0], 1e-10);  // −0.5 is floored
  EXPECT_DOUBLE_EQ(f[1], 0.5);
  const auto c = CumulativeTrapezoid(std::vector<double>{1.0, 3.0, 5.0});
  EXPECT_DOUBLE_EQ(c[0], 0.0);
  EXPECT_DOUBLE_EQ(c[1], 2.0);
  EXPECT_DOUBLE_EQ(c[2], 6.0);
  const auto i = SmoothAbsDifference(c);
  EXPECT_DOUBLE_EQ(i[0], 1e-6);
  EXPECT_DOUBLE_EQ(i[2], std::sqrt(36.0 + 1e-12));
  EXPECT_DOUBLE_EQ(SincU(0.0), 1.0);
  EXPECT_DOUBLE_EQ(SincU(2.0), std::sin(2.0) / 2.0);
  EXPECT_DOUBLE_EQ(SincU(5e-5), 1.0 - 2.5e-9 / 6.0 + 6.25e-18 / 120.0);
}

}  // namespace
}  // namespace homodyne::model::reference
