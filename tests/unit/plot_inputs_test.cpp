// Plot inputs of homodyne --plot-simulated-data / --plot-experimental-data: the simulated
// matrices reproduce the independent reference values of the spec (cases A and B, whose
// grid t = [0.1 … 0.4] is homodyne's simulated grid dt·[1..4]); homodyne's fallback
// parameters; the experimental matrices are the file's, diagonal-corrected.
#include "app/plots.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "core/errors.h"
#include "h5_read.h"
#include "io/writers.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;

std::vector<double> Read(const fs::path& file, const std::string& path) {
  return testing::ReadWholeDataset(file.string(), path);
}

config::Config SimConfig(const std::string& mode, const std::string& names,
                         const std::string& values) {
  std::string yaml = "analysis_mode: " + mode +
                     "\nanalyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n  end_frame: 4\n"
                     "  scattering: {wavevector_q: 0.01}\n"
                     "  geometry: {stator_rotor_gap: 2000000}\n"
                     "experimental_data:\n  data_folder_path: /nonexistent\n"
                     "  data_file_name: none.h5\n";
  if (!names.empty()) {
    yaml += "initial_parameters:\n  parameter_names: [" + names + "]\n  values: [" + values + "]\n";
  }
  config::ReadOptions ro;
  ro.require_data_file = false;
  return config::ReadConfigString(yaml, "sim.yaml", ro);
}

TEST(PlotInputs, SimulatedStaticMatchesReferenceCaseA) {
  const testing::ScopedTempDir tmp("plot_inputs_a");
  const fs::path dir = tmp.path();
  const config::Config cfg = SimConfig("static", "D0, alpha, D_offset", "100, 0, 10");
  SimulatedPlotOptions o;
  o.phi_deg = {0.0};
  o.contrast = 0.5;
  o.offset = 1.0;
  WriteSimulatedPlotData(dir / "sim.h5", cfg, "", o, Logger::Silent());
  const auto c2 = Read(dir / "sim.h5", "/c2_simulated");
  ASSERT_EQ(c2.size(), 16u);
  EXPECT_NEAR(c2[0 * 4 + 1], 1.499450302389114, 1e-13);
  EXPECT_NEAR(c2[0 * 4 + 3], 1.498352719507719, 1e-13);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(c2[i * 4 + i], 1.499999999995000, 1e-13);
  EXPECT_EQ(c2[1 * 4 + 0], c2[0 * 4 + 1]);
  const auto t = Read(dir / "sim.h5", "/t1");
  ASSERT_EQ(t.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(t[i], 0.1 * (i + 1), 1e-15);
  EXPECT_EQ(Read(dir / "sim.h5", "/q"), std::vector<double>{0.01});
}

TEST(PlotInputs, SimulatedLaminarMatchesReferenceCaseBAndInitialOverrides) {
  const testing::ScopedTempDir tmp("plot_inputs_b");
  const fs::path dir = tmp.path();
  // The config's D0 is replaced by the --initial-d0 override (the reference uses 100).
  const config::Config cfg =
      SimConfig("laminar_flow", "D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0",
                "999, 0, 10, 1e-4, 0, 0, 0");
  SimulatedPlotOptions o;
  o.phi_deg = {0.0, 45.0, 90.0};
  o.contrast = 0.5;
  o.offset = 1.0;
  o.overrides = {{"D0", 100.0}};
  WriteSimulatedPlotData(dir / "sim.h5", cfg, "", o, Logger::Silent());
  const auto c2 = Read(dir / "sim.h5", "/c2_simulated");
  ASSERT_EQ(c2.size(), 3u * 16u);
  EXPECT_NEAR(c2[0 * 4 + 1], 1.499113005229234, 1e-13);
  EXPECT_NEAR(c2[0 * 4 + 3], 1.495331339253184, 1e-13);
  EXPECT_NEAR(c2[2 * 4 + 2], 1.499999966221274, 1e-13);
  // φ = 90: equal to case A.
  EXPECT_NEAR(c2[32 + 0 * 4 + 1], 1.499450302389114, 1e-13);
  EXPECT_EQ(Read(dir / "sim.h5", "/phi_angles"), (std::vector<double>{0.0, 45.0, 90.0}));
  EXPECT_EQ(Read(dir / "sim.h5", "/parameters")[0], 100.0);
}

TEST(PlotInputs, SimulatedUsesHomodyneFallbacksAndDefaultAngles) {
  const testing::ScopedTempDir tmp("plot_inputs_fallback");
  const fs::path dir = tmp.path();
  const config::Config cfg = SimConfig("static", "", "");
  WriteSimulatedPlotData(dir / "sim.h5", cfg, "", {}, Logger::Silent());
  EXPECT_EQ(Read(dir / "sim.h5", "/parameters"), (std::vector<double>{100.0, -0.5, 0.0}));
  const auto phi = Read(dir / "sim.h5", "/phi_angles");
  ASSERT_EQ(phi.size(), 8u);  // no readable data: linspace(0, 180, 8)
  EXPECT_DOUBLE_EQ(phi.front(), 0.0);
  EXPECT_DOUBLE_EQ(phi.back(), 180.0);
  EXPECT_NEAR(phi[1], 180.0 / 7.0, 1e-12);
  // Default contrast 0.3 and offset 1.0: the diagonal is ≈ 1.3.
  EXPECT_NEAR(Read(dir / "sim.h5", "/c2_simulated")[0], 1.3, 1e-9);
}

TEST(PlotInputs, SimulatedRejectsBadOptions) {
  const testing::ScopedTempDir tmp("plot_inputs_bad");
  const fs::path dir = tmp.path();
  const config::Config cfg = SimConfig("static", "", "");
  SimulatedPlotOptions o;
  o.contrast = -1.0;
  try {
    WriteSimulatedPlotData(dir / "sim.h5", cfg, "", o, Logger::Silent());
    FAIL() << "negative contrast accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("--contrast"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "sim.h5"));
}

TEST(PlotInputs, ExperimentalDataAreTheFilesMatricesDiagonalCorrected) {
  const testing::ScopedTempDir tmp("plot_inputs_exp");
  const fs::path dir = tmp.path();
  const int n = 5;
  std::vector<std::vector<double>> m(2, std::vector<double>(n * n));
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        m[k][i * n + j] = 1.0 + 0.1 * k + 0.3 / (1.0 + std::abs(i - j)) + 0.001 * (i + j);
      }
    }
  }
  io::WriteApsOld((dir / "d.h5").string(), {0.0054, 0.0054}, {10.0, 100.0}, m);
  const std::string yaml =
      "analysis_mode: static\nanalyzer_parameters:\n  dt: 0.5\n"
      "  scattering: {wavevector_q: 0.0054}\n"
      "experimental_data:\n  data_folder_path: " +
      dir.string() + "\n  data_file_name: d.h5\n";
  const config::Config cfg = config::ReadConfigString(yaml, "exp.yaml");
  WriteExperimentalPlotData(dir / "plots" / "exp.h5", cfg, "");
  const auto c2 = Read(dir / "plots" / "exp.h5", "/c2_exp");
  ASSERT_EQ(c2.size(), 2u * n * n);
  for (int k = 0; k < 2; ++k) {
    const auto& a = m[k];
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const double got = c2[k * n * n + i * n + j];
        if (i != j) {
          EXPECT_DOUBLE_EQ(got, a[i * n + j]);
          continue;
        }
        // Basic correction: mean of the neighbouring super-diagonal values.
        auto sb = [&](int s) { return a[s * n + s + 1]; };
        const double want = i == 0 ? sb(0) : i == n - 1 ? sb(n - 2) : 0.5 * (sb(i - 1) + sb(i));
        EXPECT_DOUBLE_EQ(got, want);
      }
    }
  }
  EXPECT_EQ(Read(dir / "plots" / "exp.h5", "/phi_angles"), (std::vector<double>{10.0, 100.0}));
  const auto t = Read(dir / "plots" / "exp.h5", "/t1");
  ASSERT_EQ(t.size(), static_cast<std::size_t>(n));
  EXPECT_DOUBLE_EQ(t[0], 0.0);
  EXPECT_DOUBLE_EQ(t[4], 2.0);
}

}  // namespace
}  // namespace homodyne
