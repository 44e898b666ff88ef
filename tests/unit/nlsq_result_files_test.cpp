#include "outputs/nlsq_result_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "temp_dir.h"

namespace homodyne::nlsq {
namespace {

using outputs::ParametersJson;
using outputs::WriteNlsqResultFiles;

FitReport SampleReport() {
  FitReport r;
  r.analysis_mode = "laminar_flow";
  r.per_angle_mode = "individual";
  r.physical_names = {"D0",  "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset",
                      "phi0"};
  r.physical_values = {1000, -0.5, 10, 0.01, 0.1, 0.0, 2.0};
  r.physical_uncertainties = {10, 0.01, 1, 1e-4, 0.01, 1e-5, 0.1};
  r.phi_deg = {0, 90};
  r.contrast = {0.2, 0.4};
  r.contrast_uncertainty = {0.003, 0.004};
  r.offset = {1.0, 1.02};
  r.offset_uncertainty = {0.001, 0.001};
  r.chi_squared = 1234.5;
  r.n_time_points = 99;
  r.n_data = 2LL * 99 * 99;
  r.n_params = 11;
  r.reduced_chi_squared = r.chi_squared / static_cast<double>(r.n_data - r.n_params);
  r.convergence_status = "converged";
  r.quality_flag = "good";
  r.timestamp = "2026-11-22T00:00:00Z";
  return r;
}

nlohmann::json Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST(NlsqResultFiles, WritesHomodyneFilesWithItsKeys) {
  const testing::ScopedTempDir tmp("result_files");
  const auto dir = tmp.path() / "results";
  const FitReport r = SampleReport();
  WriteNlsqResultFiles(dir, r);

  auto p = Read(dir / "nlsq" / "parameters.json");
  EXPECT_EQ(p["analysis_mode"], "laminar_flow");
  EXPECT_DOUBLE_EQ(p["parameters"]["contrast"]["value"].get<double>(), 0.3);  // nanmean
  EXPECT_NEAR(p["parameters"]["contrast"]["uncertainty"].get<double>(),
              std::sqrt((0.003 * 0.003 + 0.004 * 0.004) / 2), 1e-15);  // RMS
  EXPECT_DOUBLE_EQ(p["parameters"]["phi0"]["value"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(p["per_angle"]["offset"][1]["value"].get<double>(), 1.02);
  EXPECT_EQ(p["per_angle"]["phi_angles_deg"].size(), 2u);

  auto a = Read(dir / "nlsq" / "analysis_results_nlsq.json");
  EXPECT_EQ(a["method"], "nlsq");
  EXPECT_EQ(a["fit_quality"]["degrees_of_freedom"].get<std::int64_t>(), r.n_data - r.n_params);
  // homodyne's N² with N the frames, t = 0 included (the fit grid has 99).
  EXPECT_EQ(a["dataset_info"]["n_time_points"].get<std::int64_t>(), 100 * 100);

  auto c = Read(dir / "nlsq" / "convergence_metrics.json");
  EXPECT_EQ(c["convergence"]["status"], "converged");
  EXPECT_TRUE(c["quality_validation_passed"].is_boolean());

  auto h = Read(dir / "homodyne_results.json");
  ASSERT_EQ(h["parameters"].size(), 11u);  // contrasts, offsets, physics
  EXPECT_DOUBLE_EQ(h["parameters"][0].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(h["parameters"][2].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(h["parameters"][4].get<double>(), 1000);
}

TEST(NlsqResultFiles, NonFiniteValuesBecomeNull) {
  FitReport r = SampleReport();
  r.reduced_chi_squared = std::nan("");
  auto j = nlohmann::json::parse(ParametersJson(r));
  EXPECT_TRUE(j["reduced_chi_squared"].is_null());
}

}  // namespace
}  // namespace homodyne::nlsq
