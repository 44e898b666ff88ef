// The public API (homodyne/homodyne.h) against the library it fronts: an in-memory fit
// through FitNlsq gives the bits of the `homodyne --config` fit of the same file, at any
// rank count; LoadXpcsData gives the loader's matrices; bad options are bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "homodyne/homodyne.h"
#include "io/dataset.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {
namespace {

std::string Yaml(const std::string& file) {
  const auto path = std::filesystem::path(file);
  return "analysis_mode: laminar_flow\n"
         "analyzer_parameters:\n  dt: 0.1\n  scattering:\n    wavevector_q: 0.0054\n"
         "  geometry:\n    stator_rotor_gap: 2000000\n"
         "experimental_data:\n  data_folder_path: " +
         path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
         "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, "
         "gamma_dot_t_offset, phi0]\n  values: [15000, -0.3, 0, 0.002, 0.1, 0, 0]\n"
         "parameter_space:\n  bounds:\n    - {name: D0, min: 100, max: 100000}\n"
         "optimization:\n  nlsq:\n    max_iterations: 200\n"
         "    anti_degeneracy:\n      per_angle_mode: individual\n";
}

NlsqOptions ApiOptions() {
  NlsqOptions o;
  o.mode = AnalysisMode::kLaminarFlow;
  o.stator_rotor_gap = 2e6;
  o.parameters = {{.name = "D0", .initial = 15000, .min = 100, .max = 100000},
                  {.name = "alpha", .initial = -0.3},
                  {.name = "D_offset", .initial = 0},
                  {.name = "gamma_dot_0", .initial = 0.002},  // an alias
                  {.name = "beta", .initial = 0.1},
                  {.name = "gamma_dot_t_offset", .initial = 0},
                  {.name = "phi0", .initial = 0}};
  o.per_angle = PerAngleScaling::kIndividual;
  o.max_iterations = 200;
  return o;
}

class ApiFit : public ::testing::Test {
 protected:
  void SetUp() override {
    const Comm& world = testing::TestEnvironment().world();
    path_ = dir_.file("api.h5");
    RunCollectively(world, [&] {
      if (world.rank() != 0) return;
      synth::SynthOptions o;
      o.output = path_;
      o.force = true;
      o.frames = 60;
      o.phi_deg = {-20, 25, 70, 115};
      o.noise = 2e-3;
      o.seed = 11;
      o.params = {{"D0", 20000},    {"alpha", -0.4},
                  {"D_offset", 10}, {"gamma_dot_t0", 0.003},
                  {"beta", 0.2},    {"gamma_dot_t_offset", 0.0002},
                  {"phi0", 4}};
      o.contrast = 0.3;
      o.offset = 1.0;
      synth::WriteSyntheticDataset(config::ReadConfigString(Yaml(path_), "api-test"), o);
    });
    world.Barrier();
  }
  testing::MpiTempDir dir_{testing::TestEnvironment().world(), "api"};
  std::string path_;
};

TEST_F(ApiFit, InMemoryFitHasTheBitsOfTheConfigFit) {
  const Comm& world = testing::TestEnvironment().world();
  nlsq::NlsqRunOptions ro;
  ro.print_progress = false;
  const nlsq::NlsqRunResult file_fit = nlsq::RunNlsqFit(
      world, config::ReadConfigString(Yaml(path_), "api-test"), ro, Logger::Silent());

  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const NlsqSummary api = FitNlsq(world.get(), data, ApiOptions());

  EXPECT_EQ(api.status, NlsqStatus::kConverged) << api.FullReport();
  EXPECT_EQ(api.iterations, file_fit.report.iterations);
  EXPECT_EQ(api.chi2, file_fit.report.chi_squared);  // the same bits, not just close
  ASSERT_EQ(api.physical.size(), 7U);
  for (std::size_t p = 0; p < api.physical.size(); ++p) {
    EXPECT_EQ(api.physical[p].name, file_fit.report.physical_names[p]);
    EXPECT_EQ(api.physical[p].value, file_fit.report.physical_values[p]) << api.physical[p].name;
    EXPECT_EQ(api.physical[p].uncertainty, file_fit.report.physical_uncertainties[p]);
  }
  for (std::size_t k = 0; k < api.contrast.size(); ++k) {
    EXPECT_EQ(api.contrast[k].value, file_fit.report.contrast[k]);
    EXPECT_EQ(api.offset[k].value, file_fit.report.offset[k]);
  }
  EXPECT_EQ(api.points, file_fit.unique_pairs);
  EXPECT_EQ(ToString(api.per_angle_scaling), file_fit.report.per_angle_mode);
  EXPECT_EQ(ToString(api.quality), file_fit.report.quality_flag);
  EXPECT_NE(api.quality, FitQuality::kNotAssessed);
  EXPECT_EQ(api.ranks, world.size());
  EXPECT_NE(api.FullReport().find("gamma_dot_t0"), std::string::npos);
  EXPECT_NE(api.BriefReport().find("converged"), std::string::npos);
}

// ParameterSetting::fixed is fixed_parameters: the same bits as the config fit holding them.
TEST_F(ApiFit, FixedParametersHaveTheBitsOfTheConfigFit) {
  const Comm& world = testing::TestEnvironment().world();
  nlsq::NlsqRunOptions ro;
  ro.print_progress = false;
  std::string yaml = Yaml(path_);
  const std::string values = "  values: [15000, -0.3, 0, 0.002, 0.1, 0, 0]\n";
  yaml.replace(yaml.find(values), values.size(),
               values + "  fixed_parameters: {D_offset: 0, gamma_dot_t_offset: 0}\n");
  const nlsq::NlsqRunResult file_fit =
      nlsq::RunNlsqFit(world, config::ReadConfigString(yaml, "api-test"), ro, Logger::Silent());
  NlsqOptions o = ApiOptions();
  o.parameters[2].fixed = true;
  o.parameters[5].fixed = true;
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const NlsqSummary api = FitNlsq(world.get(), data, o);
  EXPECT_EQ(api.chi2, file_fit.report.chi_squared);
  EXPECT_EQ(file_fit.n_optimised, 2 * 4 + 5);
  ASSERT_EQ(api.physical.size(), 7U);
  for (std::size_t p = 0; p < api.physical.size(); ++p) {
    EXPECT_EQ(api.physical[p].value, file_fit.report.physical_values[p]) << api.physical[p].name;
    EXPECT_EQ(api.physical[p].held, p == 2 || p == 5) << api.physical[p].name;
  }
  EXPECT_EQ(api.physical[2].value, 0.0);
  EXPECT_EQ(api.physical[2].uncertainty, 0.0);
  EXPECT_GT(api.physical[0].uncertainty, 0.0);
  EXPECT_NE(api.FullReport().find("(held, not fitted)"), std::string::npos);
}

// A view of matrices the caller holds (here one buffer of all angles, as a numpy array
// lays them out) is fitted in place, to the bits of the owned data's fit.
TEST_F(ApiFit, ViewOfCallersBufferHasTheBitsOfTheOwnedDataFit) {
  const Comm& world = testing::TestEnvironment().world();
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const NlsqSummary owned = FitNlsq(world.get(), data, ApiOptions());

  const auto n = static_cast<std::size_t>(data.n_frames());
  std::vector<double> buffer;
  for (const std::vector<double>& m : data.c2) buffer.insert(buffer.end(), m.begin(), m.end());
  XpcsDataView view;
  view.source = "caller's buffer";
  view.q = data.q;
  view.dt = data.dt;
  view.phi_deg = data.phi_deg;
  view.n_frames = data.n_frames();
  for (std::size_t k = 0; k < data.c2.size(); ++k) view.c2.push_back(buffer.data() + k * n * n);
  const NlsqSummary viewed = FitNlsq(world.get(), view, ApiOptions());

  EXPECT_EQ(viewed.status, owned.status);
  EXPECT_EQ(viewed.iterations, owned.iterations);
  EXPECT_EQ(viewed.chi2, owned.chi2);  // the same bits, not just close
  EXPECT_EQ(viewed.points, owned.points);
  ASSERT_EQ(viewed.physical.size(), owned.physical.size());
  for (std::size_t p = 0; p < owned.physical.size(); ++p) {
    EXPECT_EQ(viewed.physical[p].value, owned.physical[p].value) << owned.physical[p].name;
    EXPECT_EQ(viewed.physical[p].uncertainty, owned.physical[p].uncertainty);
  }
  for (std::size_t k = 0; k < owned.contrast.size(); ++k) {
    EXPECT_EQ(viewed.contrast[k].value, owned.contrast[k].value);
    EXPECT_EQ(viewed.offset[k].value, owned.offset[k].value);
  }
  EXPECT_EQ(ViewOf(data).c2, (std::vector<const double*>{data.c2[0].data(), data.c2[1].data(),
                                                         data.c2[2].data(), data.c2[3].data()}));
  EXPECT_EQ(ViewOf(data).n_frames, 60);
}

TEST_F(ApiFit, BadViewIsBadInputNamingTheField) {
  const Comm& world = testing::TestEnvironment().world();
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const auto expect_bad = [&](const XpcsDataView& v, const std::string& key) {
    try {
      FitNlsq(world.get(), v, ApiOptions());
      ADD_FAILURE() << "accepted; expected an error naming " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.context().key, key) << e.what();
    }
  };
  XpcsDataView missing = ViewOf(data);
  missing.c2[2] = nullptr;
  expect_bad(missing, "c2");
  XpcsDataView short_side = ViewOf(data);
  short_side.n_frames = 2;
  expect_bad(short_side, "c2");
  XpcsDataView short_phi = ViewOf(data);
  short_phi.phi_deg.pop_back();
  expect_bad(short_phi, "phi_deg");
  XpcsDataView no_q = ViewOf(data);
  no_q.q = -1.0;
  expect_bad(no_q, "q");
}

TEST_F(ApiFit, LoadXpcsDataIsTheLoadersSelection) {
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1, .phi_ranges = {{0.0, 90.0}}});
  io::LoadOptions lo;
  lo.path = path_;
  lo.dt = 0.1;
  lo.phi_filter.enabled = true;
  lo.phi_filter.ranges = {{0.0, 90.0}};
  const io::Dataset ref = io::LoadDataset(lo, Logger::Silent());
  EXPECT_EQ(data.phi_deg, ref.meta.phi_values());
  ASSERT_EQ(data.phi_deg.size(), 2U);  // 25 and 70
  EXPECT_EQ(data.n_frames(), 60);
  EXPECT_EQ(data.c2, ref.c2);
  EXPECT_EQ(data.q, ref.meta.q_physics);
}

TEST_F(ApiFit, BadOptionsAndDataAreBadInputOnEveryRank) {
  const Comm& world = testing::TestEnvironment().world();
  XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const auto expect_bad = [&](const XpcsData& d, const NlsqOptions& o, const std::string& key) {
    try {
      FitNlsq(world.get(), d, o);
      ADD_FAILURE() << "accepted; expected an error naming " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.context().key.find(key), 0U) << e.what();
    }
  };
  NlsqOptions o = ApiOptions();
  o.parameters.push_back({.name = "viscosity", .initial = 1});
  expect_bad(data, o, "parameters[viscosity]");
  o = ApiOptions();
  o.parameters[0].min = 5e5;  // above its max of 1e5
  expect_bad(data, o, "parameters[D0]");
  o = ApiOptions();
  o.parameters.push_back({.name = "contrast", .initial = 0.3, .fixed = true});
  expect_bad(data, o, "parameters[contrast]");
  o = ApiOptions();
  o.parameters[2].initial.reset();
  o.parameters[2].fixed = true;
  expect_bad(data, o, "parameters[D_offset]");
  o = ApiOptions();
  o.threads = 0;
  expect_bad(data, o, "threads");
  XpcsData short_phi = data;
  short_phi.phi_deg.pop_back();
  expect_bad(short_phi, ApiOptions(), "phi_deg");
  XpcsData no_dt = data;
  no_dt.dt = 0.0;
  expect_bad(no_dt, ApiOptions(), "dt");
}

}  // namespace
}  // namespace homodyne
