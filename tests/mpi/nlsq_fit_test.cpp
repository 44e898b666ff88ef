// End-to-end NLSQ fits on synthetic data (homodyne-synth's library path) and on the real
// measured matrix, at whatever rank count the test runs with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "config/config_reader.h"
#include "config/parameters.h"
#include "global/multistart.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/degeneracy.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"
#include "test_data.h"

namespace homodyne::nlsq {
namespace {

struct Dataset {
  std::string mode;         // static | laminar_flow
  std::string truth;        // physical values, comma separated
  std::string start;        // initial values, comma separated
  std::string per_angle;    // individual | auto | constant | fourier
  std::vector<double> phi;  // angles
  int frames = 80;
  double noise = 1e-3;
  std::uint64_t seed = 1;
  double contrast = 0.3;
  double offset = 1.0;
};

// `initial_extra`: more lines of initial_parameters (each indented by two spaces).
config::Config MakeConfig(const Dataset& d, const std::string& values, const std::string& file,
                          const std::string& initial_extra = "") {
  const bool laminar = d.mode == "laminar_flow";
  const auto path = std::filesystem::path(file);
  std::string yaml = "analysis_mode: " + d.mode +
                     "\nanalyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n  end_frame: -1\n"
                     "  scattering:\n    wavevector_q: 0.0054\n"
                     "  geometry:\n    stator_rotor_gap: 2000000\n"
                     "experimental_data:\n  data_folder_path: " +
                     path.parent_path().string() +
                     "\n  data_file_name: " + path.filename().string() +
                     "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset" +
                     (laminar ? ", gamma_dot_t0, beta, gamma_dot_t_offset, phi0" : "") +
                     "]\n  values: [" + values + "]\n" + initial_extra +
                     "optimization:\n  nlsq:\n    max_iterations: 300\n"
                     "    anti_degeneracy:\n      per_angle_mode: " +
                     d.per_angle + "\n";
  config::ReadOptions ro;
  return config::ReadConfigString(yaml, "nlsq-fit-test", ro);
}

// Writes the dataset (rank 0) into `dir` and returns its path on every rank.
std::string WriteData(const testing::MpiTempDir& dir, const Dataset& d, const std::string& name) {
  const Comm& world = testing::TestEnvironment().world();
  const std::string path = dir.file("nlsq_" + name + ".h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = d.frames;
    o.phi_deg = d.phi;
    o.noise = d.noise;
    o.seed = d.seed;
    o.contrast = d.contrast;
    o.offset = d.offset;
    synth::WriteSyntheticDataset(MakeConfig(d, d.truth, path), o);
  });
  world.Barrier();
  return path;
}

NlsqRunResult Fit(const Comm& comm, const Dataset& d, const std::string& path,
                  const std::string& start, int threads = 1,
                  const std::string& initial_extra = "") {
  NlsqRunOptions o;
  o.print_progress = false;
  o.threads = threads;
  return RunNlsqFit(comm, MakeConfig(d, start, path, initial_extra), o, Logger::Silent());
}

std::vector<double> Values(const std::string& csv) {
  std::vector<double> v;
  std::size_t pos = 0;
  while (pos < csv.size()) {
    const std::size_t c = std::min(csv.find(',', pos), csv.size());
    v.push_back(std::stod(csv.substr(pos, c - pos)));
    pos = c + 1;
  }
  return v;
}

void ExpectRecovered(const NlsqRunResult& r, const Dataset& d) {
  ASSERT_TRUE(r.summary.IsUsable()) << r.summary.BriefReport();
  EXPECT_EQ(r.report.convergence_status, "converged") << r.summary.BriefReport();
  const auto truth = Values(d.truth);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const double v = r.report.physical_values[i];
    const double s = r.report.physical_uncertainties[i];
    EXPECT_GT(s, 0.0) << r.report.physical_names[i];
    EXPECT_LE(std::abs(v - truth[i]), 3.0 * s)
        << r.report.physical_names[i] << " fit " << v << " ± " << s << " truth " << truth[i];
  }
  EXPECT_NEAR(r.report.physical_values[0], truth[0], 0.02 * std::abs(truth[0])) << "D0 within 2%";
  EXPECT_NEAR(r.report.physical_values[1], truth[1], 0.02 * std::abs(truth[1]))
      << "alpha within 2%";
  for (std::size_t k = 0; k < d.phi.size(); ++k) {
    EXPECT_NEAR(r.report.contrast[k], d.contrast, 0.01);
    EXPECT_NEAR(r.report.offset[k], d.offset, 0.01);
  }
}

const Dataset kLaminar{"laminar_flow",
                       "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4",
                       "10000, -0.2, 20, 0.002, 0.1, 0.0001, 2",
                       "individual",
                       {-30, 0, 30, 60, 90},
                       100};
const Dataset kStatic{"static",     "3000, -0.6, 20", "1000, 0.0, 0.0",
                      "individual", {0, 60, 120},     100};

TEST(NlsqFit, LaminarIndividualRecoversTruth) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  const auto path = WriteData(dir, kLaminar, "laminar_ind");
  ExpectRecovered(Fit(testing::TestEnvironment().world(), kLaminar, path, kLaminar.start),
                  kLaminar);
}

// The homodyne modes' individual layout keeps the configured scaling bounds (two_component
// alone takes xpcsjax's [0.1, 0.8], nlsq_two_component_layers_test.cpp).
TEST(NlsqFit, HomodyneIndividualScalingBoundsAreTheConfiguredOnes) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "nlsq_fit");
  for (Dataset d : {kLaminar, kStatic}) {
    d.frames = 20;
    const auto path = WriteData(dir, d, d.mode + "_bounds");
    NlsqRunOptions o;
    o.print_progress = false;
    const XpcsFitSession s(world, MakeConfig(d, d.start, path), o, Logger::Silent());
    ASSERT_EQ(s.layout().layout(), model::ScalingLayout::kIndividual);
    const auto n = static_cast<std::size_t>(d.phi.size());
    for (std::size_t i = 0; i < 2 * n; ++i) {
      EXPECT_EQ(s.lower()[i], i < n ? 0.0 : 0.5) << d.mode << " " << i;
      EXPECT_EQ(s.upper()[i], i < n ? 1.0 : 1.5) << d.mode << " " << i;
    }
  }
}

TEST(NlsqFit, LaminarAutoAveragedRecoversTruth) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kLaminar;
  d.per_angle = "auto";
  d.phi = {-20, 10, 45, 80, 110, 150, 170, 200};  // 8 angles → averaged scaling
  d.frames = 160;
  d.seed = 2;
  const auto path = WriteData(dir, d, "laminar_auto");
  const auto r = Fit(testing::TestEnvironment().world(), d, path, d.start);
  EXPECT_EQ(r.layout, "auto_averaged");
  EXPECT_EQ(r.n_optimised, 2 + 7);
  ExpectRecovered(r, d);
}

TEST(NlsqFit, StaticIndividualAndAutoRecoverTruth) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  for (const std::string mode : {"individual", "auto"}) {
    Dataset d = kStatic;
    d.per_angle = mode;
    d.seed = 3;
    const auto path = WriteData(dir, d, "static_" + mode);
    const auto r = Fit(testing::TestEnvironment().world(), d, path, d.start);
    EXPECT_EQ(r.layout,
              mode == "auto" ? "auto_averaged" : "individual");  // static honours the mode
    ExpectRecovered(r, d);
  }
}

// The remaining per-angle layouts: constant (quantile estimates held fixed, physics
// only) and fourier (order 2, needs ≥ 5 angles), in both analysis modes.
TEST(NlsqFit, ConstantAndFourierLayoutsRecoverTruth) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  struct Case {
    Dataset d;
    std::string layout;
    int optimised;
  };
  Dataset lam = kLaminar;
  lam.phi = {-60, -20, 10, 40, 70, 100};
  lam.frames = 120;
  Dataset stat = kStatic;
  stat.phi = {0, 30, 60, 90, 120, 150};
  for (Case c : {Case{lam, "fourier", 2 * 5 + 7}, Case{stat, "fourier", 2 * 5 + 3},
                 Case{lam, "constant", 7}, Case{stat, "constant", 3}}) {
    c.d.per_angle = c.layout;
    c.d.seed = 21;
    const auto path = WriteData(dir, c.d, c.d.mode + "_" + c.layout);
    const auto r = Fit(testing::TestEnvironment().world(), c.d, path, c.d.start);
    EXPECT_EQ(r.layout, c.layout == "constant" ? "fixed_constant" : "fourier");
    EXPECT_EQ(r.n_optimised, c.optimised);
    ASSERT_TRUE(r.summary.IsUsable()) << c.d.mode << " " << c.layout;
    const auto truth = Values(c.d.truth);
    if (c.layout == "fourier") {
      ExpectRecovered(r, c.d);
    } else {
      // The quantile estimates are held fixed (the physics absorbs their bias): the
      // scaling stays at its start, and the constrained fit cannot beat the individual one.
      EXPECT_EQ(r.report.convergence_status, "converged");
      const std::size_t n_scaling = 2 * c.d.phi.size();
      for (std::size_t e = 0; e < n_scaling; ++e) EXPECT_EQ(r.expanded[e], r.initial_expanded[e]);
      Dataset ind = c.d;
      ind.per_angle = "individual";
      const auto free_fit = Fit(testing::TestEnvironment().world(), ind, path, c.d.start);
      EXPECT_GE(r.report.chi_squared, free_fit.report.chi_squared * (1.0 - 1e-9));
      for (double u : r.report.physical_uncertainties) EXPECT_TRUE(std::isfinite(u));
    }
  }
}

TEST(NlsqFit, StartingAtTheTruthStaysAndMidpointsReachTheSameMinimum) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kStatic;
  d.seed = 4;
  const auto path = WriteData(dir, d, "static_start");
  const Comm& world = testing::TestEnvironment().world();
  const auto from_truth = Fit(world, d, path, d.truth);
  ASSERT_TRUE(from_truth.summary.IsUsable());
  const auto truth = Values(d.truth);
  for (std::size_t i = 0; i < truth.size(); ++i) {
    EXPECT_LE(std::abs(from_truth.report.physical_values[i] - truth[i]),
              2.0 * from_truth.report.physical_uncertainties[i]);
  }
  // Bound midpoints: D0 50050, alpha 0, D_offset 0.
  const auto from_mid = Fit(world, d, path, "50050, 0, 0");
  ASSERT_TRUE(from_mid.summary.IsUsable()) << from_mid.summary.BriefReport();
  EXPECT_NEAR(from_mid.report.chi_squared, from_truth.report.chi_squared,
              1e-6 * from_truth.report.chi_squared);
  // Both meet the optimality test (Gauss-Newton decrement <= 1e-8 of chi2 ~ 1e4): within
  // sqrt(1e-8 * chi2) ~ 0.01-0.02 sigma of the exact minimum each.
  for (std::size_t i = 0; i < truth.size(); ++i) {
    EXPECT_NEAR(from_mid.report.physical_values[i], from_truth.report.physical_values[i],
                0.05 * from_truth.report.physical_uncertainties[i]);
  }
}

// initial_parameters.values: null: the fit starts at homodyne's NLSQ defaults (not the
// bounds' midpoints, from which a laminar fit stalls far from the minimum) and, on the
// laminar demo's parameters with one scaling per angle, reaches the minimum of a fit started
// at the truth.
TEST(NlsqFit, UnsetValuesStartAtHomodynesDefaultsAndReachTheMinimum) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kLaminar;
  d.phi = {-20, 10, 40, 70, 100, 130, 160, 190};
  d.frames = 120;
  d.noise = 2e-3;
  d.seed = 2024;
  const auto path = WriteData(dir, d, "laminar_unset");
  const Comm& world = testing::TestEnvironment().world();
  const auto from_truth = Fit(world, d, path, d.truth);
  std::string yaml =
      "analysis_mode: laminar_flow\n"
      "analyzer_parameters:\n  dt: 0.1\n  scattering:\n    wavevector_q: 0.0054\n"
      "  geometry:\n    stator_rotor_gap: 2000000\n"
      "experimental_data:\n  data_folder_path: " +
      std::filesystem::path(path).parent_path().string() +
      "\n  data_file_name: " + std::filesystem::path(path).filename().string() +
      "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, "
      "beta, gamma_dot_t_offset, phi0]\n  values: null\n"
      "optimization:\n  nlsq:\n    anti_degeneracy:\n      per_angle_mode: "
      "individual\n";
  NlsqRunOptions o;
  o.print_progress = false;
  const auto unset =
      RunNlsqFit(world, config::ReadConfigString(yaml, "values-null"), o, Logger::Silent());
  const std::vector<double> defaults = {1e4, -1.5, 0.0, 1e-3, 0.0, 0.0, 0.0};
  const std::size_t first_phys = unset.initial_expanded.size() - defaults.size();
  for (std::size_t p = 0; p < defaults.size(); ++p) {
    EXPECT_EQ(unset.initial_expanded[first_phys + p], defaults[p])
        << unset.expanded_names[first_phys + p];
  }
  ASSERT_TRUE(from_truth.summary.IsUsable());
  EXPECT_EQ(unset.report.convergence_status, "converged") << unset.summary.BriefReport();
  EXPECT_LE(unset.report.chi_squared, from_truth.report.chi_squared * (1.0 + 1e-6))
      << unset.summary.BriefReport() << " vs " << from_truth.summary.BriefReport();
}

// The distributed fit equals a fit of all data on one process, bit for bit, and the
// thread count does not change a bit either.
TEST(NlsqFit, ResultsAreIndependentOfRanksAndThreads) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kLaminar;
  d.frames = 60;
  d.seed = 5;
  const auto path = WriteData(dir, d, "laminar_ranks");
  const auto distributed = Fit(testing::TestEnvironment().world(), d, path, d.start, 1);
  Comm self(MPI_COMM_SELF);
  const auto serial = Fit(self, d, path, d.start, 2);
  ASSERT_EQ(distributed.expanded.size(), serial.expanded.size());
  EXPECT_EQ(std::memcmp(distributed.expanded.data(), serial.expanded.data(),
                        serial.expanded.size() * sizeof(double)),
            0);
  EXPECT_EQ(distributed.report.chi_squared, serial.report.chi_squared);
  EXPECT_EQ(distributed.summary.iterations, serial.summary.iterations);
}

// A held parameter stays exactly at its value with σ exactly 0, has no optimiser column and
// no place in the DOF; the other parameters are recovered; the bits do not depend on the ranks.
void ExpectHeld(const NlsqRunResult& r, const std::vector<std::string>& held,
                const std::vector<double>& values, int n_optimised) {
  ASSERT_TRUE(r.summary.IsUsable()) << r.summary.BriefReport();
  const FitReport& rep = r.report;
  ASSERT_EQ(rep.physical_held.size(), rep.physical_names.size());
  for (std::size_t p = 0; p < rep.physical_names.size(); ++p) {
    const auto it = std::find(held.begin(), held.end(), rep.physical_names[p]);
    SCOPED_TRACE(rep.physical_names[p]);
    EXPECT_EQ(rep.physical_held[p], it != held.end());
    if (it != held.end()) {
      EXPECT_EQ(rep.physical_values[p], values[static_cast<std::size_t>(it - held.begin())]);
      EXPECT_EQ(rep.physical_uncertainties[p], 0.0);
    } else {
      EXPECT_GT(rep.physical_uncertainties[p], 0.0);
    }
  }
  EXPECT_EQ(r.n_optimised, n_optimised);
  EXPECT_EQ(r.summary.x.size(), static_cast<std::size_t>(n_optimised));
  for (const auto& name : held) {
    EXPECT_EQ(std::count(rep.degeneracy.names.begin(), rep.degeneracy.names.end(), name), 0);
  }
  // Individual layout: the DOF counts the optimised parameters only.
  EXPECT_EQ(rep.n_params, n_optimised);
  EXPECT_EQ(rep.reduced_chi_squared,
            rep.chi_squared / static_cast<double>(rep.n_data - n_optimised));
}

TEST(NlsqFit, FixedParametersAreHeldExactly) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kLaminar;
  d.frames = 60;
  d.truth = "20000, -0.4, 0, 0.003, 0.2, 0, 4";
  d.start = "10000, -0.2, 20, 0.002, 0.1, 0.0001, 2";  // the fixed values win over these
  const auto path = WriteData(dir, d, "laminar_fixed");
  const std::string fixed = "  fixed_parameters: {D_offset: 0.0, gamma_dot_t_offset: 0.0}\n";
  const auto r = Fit(testing::TestEnvironment().world(), d, path, d.start, 1, fixed);
  const int n_angles = static_cast<int>(d.phi.size());
  ExpectHeld(r, {"D_offset", "gamma_dot_t_offset"}, {0.0, 0.0}, 2 * n_angles + 5);
  EXPECT_EQ(r.report.convergence_status, "converged") << r.summary.BriefReport();
  const auto truth = Values(d.truth);
  for (std::size_t i : {0u, 1u, 3u, 4u, 6u}) {
    EXPECT_LE(std::abs(r.report.physical_values[i] - truth[i]),
              4.0 * r.report.physical_uncertainties[i])
        << r.report.physical_names[i];
  }
  // The same bits on one rank with two threads.
  Comm self(MPI_COMM_SELF);
  const auto serial = Fit(self, d, path, d.start, 2, fixed);
  ASSERT_EQ(serial.expanded.size(), r.expanded.size());
  EXPECT_EQ(
      std::memcmp(serial.expanded.data(), r.expanded.data(), r.expanded.size() * sizeof(double)),
      0);
  EXPECT_EQ(serial.report.chi_squared, r.report.chi_squared);
  // The same held set through active_parameters: the same fit, bit for bit.
  const auto active =
      Fit(testing::TestEnvironment().world(), d, path, "10000, -0.2, 0, 0.002, 0.1, 0, 2", 1,
          "  active_parameters: [D0, alpha, gamma_dot_t0, beta, phi0]\n");
  ExpectHeld(active, {"D_offset", "gamma_dot_t_offset"}, {0.0, 0.0}, 2 * n_angles + 5);
  EXPECT_EQ(
      std::memcmp(active.expanded.data(), r.expanded.data(), r.expanded.size() * sizeof(double)),
      0);
}

TEST(NlsqFit, ActiveParametersSubsetHoldsTheRestAtTheirValues) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  Dataset d = kStatic;
  d.frames = 60;
  const auto path = WriteData(dir, d, "static_active");
  // D_offset is held at its truth (20), alpha fitted from a start away from it.
  const std::string start = "1000, -0.3, 20";
  const std::string active = "  active_parameters: [D0, alpha]\n";
  const auto r = Fit(testing::TestEnvironment().world(), d, path, start, 1, active);
  const int n_angles = static_cast<int>(d.phi.size());
  ExpectHeld(r, {"D_offset"}, {20.0}, 2 * n_angles + 2);
  EXPECT_EQ(r.report.convergence_status, "converged") << r.summary.BriefReport();
  const auto truth = Values(d.truth);
  EXPECT_NEAR(r.report.physical_values[0], truth[0], 0.02 * truth[0]);
  EXPECT_NEAR(r.report.physical_values[1], truth[1], 0.02 * std::abs(truth[1]));
  Comm self(MPI_COMM_SELF);
  const auto serial = Fit(self, d, path, start, 1, active);
  EXPECT_EQ(
      std::memcmp(serial.expanded.data(), r.expanded.data(), r.expanded.size() * sizeof(double)),
      0);
  // The free fit has one more optimised parameter and so one fewer degree of freedom.
  const auto free = Fit(testing::TestEnvironment().world(), d, path, start, 1);
  EXPECT_EQ(free.n_optimised, r.n_optimised + 1);
  EXPECT_EQ(free.report.n_params, r.report.n_params + 1);
  EXPECT_TRUE(std::none_of(free.report.physical_held.begin(), free.report.physical_held.end(),
                           [](bool h) { return h; }));
  // Everything held with a layout that fits no scaling: bad input, not a solve of nothing.
  Dataset constant = d;
  constant.per_angle = "constant";
  try {
    Fit(testing::TestEnvironment().world(), constant, path, start, 1, "  active_parameters: []\n");
    ADD_FAILURE() << "a fit of zero parameters was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing to fit"), std::string::npos) << e.what();
  }
}

// Calibrated uncertainties: over 24 noisy datasets per mode the truth lies within 2σ for
// ≥ 85 % of the (dataset, parameter) pairs.
TEST(NlsqFit, UncertaintiesAreCalibrated) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  for (const Dataset& base : {kStatic, kLaminar}) {
    int inside = 0;
    int total = 0;
    for (std::uint64_t seed = 100; seed < 124; ++seed) {
      Dataset d = base;
      d.frames = 60;
      d.phi = {0, 45, 90};
      d.seed = seed;
      d.noise = 2e-3;
      const auto path = WriteData(dir, d, "coverage_" + d.mode);
      const auto r = Fit(testing::TestEnvironment().world(), d, path, d.start);
      ASSERT_TRUE(r.summary.IsUsable()) << r.summary.BriefReport();
      const auto truth = Values(d.truth);
      for (std::size_t i = 0; i < truth.size(); ++i) {
        inside += std::abs(r.report.physical_values[i] - truth[i]) <=
                          2.0 * r.report.physical_uncertainties[i]
                      ? 1
                      : 0;
        ++total;
      }
    }
    EXPECT_GE(static_cast<double>(inside) / total, 0.85)
        << base.mode << ": " << inside << " of " << total;
    if (testing::TestEnvironment().rank() == 0)
      std::printf("[ coverage ] %s: truth within 2 sigma for %d of %d (dataset, parameter) pairs\n",
                  base.mode.c_str(), inside, total);
  }
}

TEST(NlsqFit, RealMeasuredMatrixFitsInStaticMode) {
  Dataset d = kStatic;
  d.phi = {0};
  const std::string file =
      std::filesystem::weakly_canonical(testing::TestDataPath("real/bnl_twotime_350.h5")).string();
  auto cfg = MakeConfig(d, "1000, 0, 0", file);
  cfg.analyzer.dt = 1.0;
  NlsqRunOptions o;
  o.print_progress = false;
  const auto r = RunNlsqFit(testing::TestEnvironment().world(), cfg, o, Logger::Silent());
  EXPECT_EQ(r.report.convergence_status, "converged") << r.summary.BriefReport();
  EXPECT_TRUE(std::isfinite(r.report.chi_squared));
  EXPECT_GT(r.report.chi_squared, 0.0);
  EXPECT_LT(r.report.chi_squared, r.summary.initial_chi2);
  EXPECT_EQ(r.report.n_time_points, 349);
  // D0 and D_offset trade off on this matrix (± 6e5 each): the fit says so, by name.
  const auto& dg = r.report.degeneracy;
  const bool named = std::any_of(dg.correlated.begin(), dg.correlated.end(), [](const auto& p) {
    return (p.first == "D0" && p.second == "D_offset") ||
           (p.first == "D_offset" && p.second == "D0");
  });
  EXPECT_TRUE(named) << "no warning names D0 with D_offset";
  ASSERT_FALSE(dg.weakest.empty());
  EXPECT_LT(dg.weakest.front().relative_eigenvalue, kWeakDirectionWarning);
  std::vector<std::string> span;
  for (const auto& [name, c] : dg.weakest.front().components) span.push_back(name);
  EXPECT_NE(std::find(span.begin(), span.end(), "D0"), span.end());
  EXPECT_NE(std::find(span.begin(), span.end(), "D_offset"), span.end());
}

}  // namespace
}  // namespace homodyne::nlsq

namespace homodyne::nlsq {
namespace {

// Multistart from the default start (values null) reaches the minimum a fit from the truth
// finds, deterministically for a seed, whatever the number of rank groups. (From the bound
// midpoints the model sits on its plateau: D0 = 50050 decorrelates every lag, and those
// starts end stalled or in another minimum.)
// Multistart draws its Latin-hypercube starts over the varying parameters only: every start
// and every answer keeps the held ones at their values.
TEST(NlsqMultiStart, HeldParametersStayAtTheirValuesInEveryStart) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  const Comm& world = testing::TestEnvironment().world();
  Dataset d = kLaminar;
  d.frames = 50;
  d.seed = 13;
  d.per_angle = "auto";
  d.truth = "20000, -0.4, 0, 0.003, 0.2, 0, 4";
  const auto path = WriteData(dir, d, "multistart_held");
  const config::Config cfg =
      MakeConfig(d, d.start, path, "  fixed_parameters: {D_offset: 0, gamma_dot_t_offset: 0}\n");
  NlsqRunOptions o;
  o.print_progress = false;
  global::MultiStartOptions ms;
  ms.n_starts = 4;
  ms.seed = 5;
  global::MultiStartSummary a;
  const auto r = global::RunMultiStartFit(world, cfg, o, ms, Logger::Silent(), &a);
  ASSERT_EQ(a.starts.size(), 5u);
  EXPECT_EQ(a.parameter_names.size(), 7u);  // averaged contrast, offset and five physics
  for (const auto& s : a.starts) EXPECT_EQ(s.start.size(), 7u);
  EXPECT_EQ(std::count(a.parameter_names.begin(), a.parameter_names.end(), "D_offset"), 0);
  if (world.rank() == 0) {
    ASSERT_TRUE(r.summary.IsUsable());
    EXPECT_EQ(r.report.physical_values[2], 0.0);
    EXPECT_EQ(r.report.physical_values[5], 0.0);
    EXPECT_EQ(r.report.physical_uncertainties[2], 0.0);
    EXPECT_TRUE(r.report.IsHeld(5));
  }
}

TEST(NlsqMultiStart, ReachesTheTruthMinimumDeterministically) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_fit");
  const Comm& world = testing::TestEnvironment().world();
  Dataset d = kLaminar;
  d.frames = 70;
  d.seed = 11;
  d.per_angle = "auto";
  const auto path = WriteData(dir, d, "multistart");
  const auto from_truth = Fit(world, d, path, d.truth);
  ASSERT_TRUE(from_truth.summary.IsUsable());

  config::Config cfg = MakeConfig(d, d.truth, path);
  cfg.initial_parameters.values.reset();
  for (auto& p : cfg.parameters) {
    p.initial = config::NlsqDefaultStart(p);
    p.initial_from_config = false;
  }
  NlsqRunOptions o;
  o.print_progress = false;
  global::MultiStartOptions ms;
  ms.n_starts = 6;
  ms.seed = 3;
  global::MultiStartSummary a, b;
  const auto r = global::RunMultiStartFit(world, cfg, o, ms, Logger::Silent(), &a);
  ms.max_groups = 1;  // all ranks in one group: same starts, same outcomes
  global::RunMultiStartFit(world, cfg, o, ms, Logger::Silent(), &b);
  ASSERT_EQ(a.starts.size(), 7u);
  EXPECT_EQ(a.groups, std::min(world.size(), 7));
  EXPECT_EQ(b.groups, 1);
  EXPECT_EQ(a.best, b.best);
  for (std::size_t i = 0; i < a.starts.size(); ++i) {
    EXPECT_EQ(a.starts[i].start, b.starts[i].start);
    EXPECT_EQ(a.starts[i].start_chi2, b.starts[i].start_chi2);
    EXPECT_EQ(a.starts[i].solved, b.starts[i].solved);
    EXPECT_EQ(a.starts[i].x, b.starts[i].x);
  }
  EXPECT_EQ(a.starts[0].start.back(), 0.0);  // homodyne's default phi0
  const int solved = static_cast<int>(
      std::count_if(a.starts.begin(), a.starts.end(), [](const auto& s) { return s.solved; }));
  EXPECT_EQ(solved, 3);  // max(3, ⌊0.5·7⌋)
  EXPECT_GE(a.basins.size(), 1u);
  if (world.rank() == 0) {  // group 0 holds the polished result
    ASSERT_TRUE(r.summary.IsUsable());
    EXPECT_NEAR(r.report.chi_squared, from_truth.report.chi_squared,
                1e-6 * from_truth.report.chi_squared);
    for (std::size_t i = 0; i < r.report.physical_values.size(); ++i) {
      EXPECT_NEAR(r.report.physical_values[i], from_truth.report.physical_values[i],
                  0.05 * from_truth.report.physical_uncertainties[i])
          << r.report.physical_names[i];
    }
  }
}

}  // namespace
}  // namespace homodyne::nlsq
