// The public CMC API against the library it fronts: FitCmc on in-memory data gives the bits
// of the `homodyne --method cmc` sampling of the same file (with the same NLSQ warm start),
// complete on every rank; bad options are bad input naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "cmc/cmc_fit.h"
#include "config/config_reader.h"
#include "homodyne/homodyne.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {
namespace {

std::string Yaml(const std::string& file) {
  const auto path = std::filesystem::path(file);
  return "analysis_mode: static\n"
         "analyzer_parameters:\n  dt: 0.1\n  scattering:\n    wavevector_q: 0.0054\n"
         "experimental_data:\n  data_folder_path: " +
         path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
         "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
         "  values: [20000, -0.3, 0]\n"
         "parameter_space:\n  bounds:\n    - {name: D0, min: 100, max: 100000}\n"
         "optimization:\n  nlsq:\n    anti_degeneracy:\n      per_angle_mode: individual\n"
         "  cmc:\n    per_angle_mode: individual\n    seed: 5\n    sharding: {num_shards: 2}\n"
         "    per_shard_mcmc: {num_warmup: 150, num_samples: 100, num_chains: 2}\n";
}

NlsqOptions NlsqApiOptions() {
  NlsqOptions o;
  o.parameters = {{.name = "D0", .initial = 20000, .min = 100, .max = 100000},
                  {.name = "alpha", .initial = -0.3},
                  {.name = "D_offset", .initial = 0}};
  o.per_angle = PerAngleScaling::kIndividual;
  return o;
}

CmcOptions CmcApiOptions() {
  CmcOptions o;
  o.parameters = NlsqApiOptions().parameters;
  o.per_angle = PerAngleScaling::kIndividual;
  o.seed = 5;
  o.shards = 2;
  o.chains = 2;
  o.warmup = 150;
  o.draws = 100;
  return o;
}

class ApiCmc : public ::testing::Test {
 protected:
  void SetUp() override {
    const Comm& world = testing::TestEnvironment().world();
    path_ = dir_.file("api_cmc.h5");
    RunCollectively(world, [&] {
      if (world.rank() != 0) return;
      synth::SynthOptions o;
      o.output = path_;
      o.force = true;
      o.frames = 50;
      o.phi_deg = {10, 80};
      o.noise = 3e-3;
      o.seed = 17;
      o.params = {{"D0", 30000}, {"alpha", -0.6}, {"D_offset", 20}};
      o.contrast = 0.3;
      o.offset = 1.0;
      synth::WriteSyntheticDataset(config::ReadConfigString(Yaml(path_), "api-cmc-test"), o);
    });
    world.Barrier();
  }
  testing::MpiTempDir dir_{testing::TestEnvironment().world(), "api_cmc"};
  std::string path_;
};

TEST_F(ApiCmc, InMemorySamplingHasTheBitsOfTheConfigSampling) {
  const Comm& world = testing::TestEnvironment().world();
  const config::Config cfg = config::ReadConfigString(Yaml(path_), "api-cmc-test");
  nlsq::NlsqRunOptions no;
  no.print_progress = false;
  const nlsq::NlsqRunResult file_nlsq = nlsq::RunNlsqFit(world, cfg, no, Logger::Silent());
  cmc::CmcRunOptions co;
  co.warm_start = &file_nlsq;
  co.print_progress = false;
  const cmc::CmcRunResult file_cmc = cmc::RunCmcFit(world, cfg, co, Logger::Silent());

  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  CmcOptions options = CmcApiOptions();
  options.warm_start = FitNlsq(world.get(), data, NlsqApiOptions());
  const CmcSummary api = FitCmc(world.get(), data, options);

  // Every rank holds the summary; the file sampling's lives on rank 0.
  ASSERT_EQ(api.physical.size(), 3U) << api.FullReport();
  ASSERT_EQ(api.contrast.size(), 2U);
  ASSERT_EQ(api.shards.size(), 2U);
  EXPECT_EQ(api.chains, 2);
  EXPECT_EQ(api.warmup, 150);
  EXPECT_EQ(api.draws, 100);
  EXPECT_EQ(api.ranks, world.size());
  EXPECT_EQ(api.per_angle_scaling, ScalingLayout::kIndividual);
  EXPECT_NE(api.FullReport().find("D_offset"), std::string::npos);
  EXPECT_NE(api.BriefReport().find("R-hat"), std::string::npos);
  // Rank 0's bits on every rank: compare every rank's summary with rank 0's.
  std::vector<double> mine;
  for (const auto& p : api.physical) mine.insert(mine.end(), {p.mean, p.std});
  for (const auto& d : api.shards) mine.insert(mine.end(), {d.max_rhat, d.min_ess});
  std::vector<double> root = mine;
  MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_DOUBLE, 0, world.get());
  EXPECT_EQ(mine, root);
  if (world.rank() != 0) return;

  ASSERT_EQ(file_cmc.parameters.size(), 7U);  // contrast_0, contrast_1, offset_0, offset_1, physics
  for (std::size_t p = 0; p < 3; ++p) {
    const cmc::ParameterSummary& f = file_cmc.parameters[4 + p];
    EXPECT_EQ(api.physical[p].name, f.name);
    EXPECT_EQ(api.physical[p].mean, f.mean) << f.name;  // the same bits, not just close
    EXPECT_EQ(api.physical[p].std, f.std) << f.name;
  }
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(api.contrast[k].mean, file_cmc.parameters[k].mean);
    EXPECT_EQ(api.offset[k].mean, file_cmc.parameters[2 + k].mean);
  }
  for (std::size_t s = 0; s < 2; ++s) {
    const cmc::ShardDiagnostics& f = file_cmc.shards[s];
    EXPECT_EQ(api.shards[s].points, f.points);
    EXPECT_EQ(api.shards[s].max_rhat, f.max_rhat);
    EXPECT_EQ(api.shards[s].min_ess, f.min_ess);
    EXPECT_EQ(api.shards[s].divergence_rate, f.divergence_rate);
    EXPECT_EQ(api.shards[s].acceptance_rate, f.acceptance_rate);
    EXPECT_EQ(api.shards[s].used, f.used);
  }
  EXPECT_EQ(api.shards_used, file_cmc.shards_used);
  // Two chains per shard: every R-hat is a number, and the status is all_converged's verdict.
  EXPECT_EQ(api.status, file_cmc.all_converged ? CmcStatus::kConverged : CmcStatus::kNotConverged);
  EXPECT_EQ(ToString(api.per_angle_scaling), file_cmc.per_angle_mode);
  EXPECT_EQ(api.max_rhat, file_cmc.max_rhat);
}

// ParameterSetting::fixed: the parameter is held at its value, not sampled; the others are.
TEST_F(ApiCmc, FixedParameterIsHeldNotSampled) {
  const Comm& world = testing::TestEnvironment().world();
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  CmcOptions options = CmcApiOptions();
  options.parameters.push_back({.name = "D_offset", .initial = 20.0, .fixed = true});
  const CmcSummary api = FitCmc(world.get(), data, options);
  ASSERT_EQ(api.physical.size(), 3U) << api.FullReport();
  for (const PosteriorEstimate& p : api.physical) {
    if (p.name == "D_offset") {
      EXPECT_TRUE(p.held);
      EXPECT_EQ(p.mean, 20.0);
      EXPECT_EQ(p.std, 0.0);
    } else {
      EXPECT_FALSE(p.held) << p.name;
      EXPECT_GT(p.std, 0.0) << p.name;
    }
  }
}

TEST_F(ApiCmc, BadOptionsAreBadInputNamingTheField) {
  const Comm& world = testing::TestEnvironment().world();
  const XpcsData data = LoadXpcsData({.file = path_, .dt = 0.1});
  const auto expect_bad = [&](const CmcOptions& o, const std::string& key) {
    try {
      FitCmc(world.get(), data, o);
      ADD_FAILURE() << "accepted; expected an error naming " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.context().key.find(key), 0U) << e.what();
    }
  };
  const auto with = [](auto change) {
    CmcOptions o = CmcApiOptions();
    change(o);
    return o;
  };
  expect_bad(with([](CmcOptions& o) { o.parameters.push_back({.name = "viscosity"}); }),
             "parameters[viscosity]");
  expect_bad(with([](CmcOptions& o) { o.per_angle = PerAngleScaling::kFourier; }), "per_angle");
  expect_bad(with([](CmcOptions& o) { o.shards = -1; }), "shards");
  expect_bad(with([](CmcOptions& o) { o.chains = 0; }), "chains");
  expect_bad(with([](CmcOptions& o) { o.warmup = -1; }), "warmup");
  expect_bad(with([](CmcOptions& o) { o.draws = 0; }), "draws");
  expect_bad(with([](CmcOptions& o) { o.seed = -3; }), "seed");
  expect_bad(with([](CmcOptions& o) { o.target_accept = 1.0; }), "target_accept");
  expect_bad(with([](CmcOptions& o) { o.max_tree_depth = 0; }), "max_tree_depth");
  expect_bad(with([](CmcOptions& o) { o.threads = 0; }), "threads");
  expect_bad(with([](CmcOptions& o) { o.stator_rotor_gap = -1; }), "stator_rotor_gap");
  expect_bad(with([](CmcOptions& o) {
               o.warm_start = NlsqSummary{};  // no physical parameters
             }),
             "warm_start");
  // Valid options the data cannot support: too many shards for its points.
  expect_bad(with([](CmcOptions& o) { o.shards = 1000; }), "optimization.cmc.sharding.num_shards");
}

}  // namespace
}  // namespace homodyne
