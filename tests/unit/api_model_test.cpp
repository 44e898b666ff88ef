// The public API's serial parts: EvaluateC2 against the reference oracle, its bad input,
// and the public options' defaults against the config reader's (one set of defaults).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/config_reader.h"
#include "homodyne/homodyne.h"
#include "io/selection.h"
#include "model/reference_model.h"

namespace homodyne {
namespace {

ModelGrid Grid(AnalysisMode mode) {
  ModelGrid g;
  g.mode = mode;
  g.q = 0.0054;
  g.dt = 0.1;
  g.stator_rotor_gap = 2e6;
  g.n_frames = 40;
  g.phi_deg = {-30.0, 10.0, 95.0};
  return g;
}

ModelParameters Parameters(AnalysisMode mode) {
  ModelParameters p;
  p.physical = {2.0e4, -0.4, 10.0};
  if (mode == AnalysisMode::kLaminarFlow)
    p.physical.insert(p.physical.end(), {3e-3, 0.2, 2e-4, 4.0});
  p.contrast = {0.3, 0.25, 0.35};
  p.offset = {1.0, 1.01, 0.99};
  return p;
}

class ApiModel : public ::testing::TestWithParam<AnalysisMode> {};

TEST_P(ApiModel, ExactIsTheReferenceAndFastIsWithin1e13) {
  const ModelGrid g = Grid(GetParam());
  const ModelParameters p = Parameters(GetParam());
  model::reference::ModelInput in;
  in.mode = g.mode;
  in.geometry = {g.q, g.stator_rotor_gap, g.dt};
  in.t = io::LoaderTimeGrid(g.dt, g.n_frames);
  in.phi_deg = g.phi_deg;
  in.physical = p.physical;
  in.contrast = p.contrast;
  in.offset = p.offset;
  const model::reference::ModelEvaluation ref = model::reference::Evaluate(in);

  const auto exact = EvaluateC2(g, p, {.exact = true});
  const auto fast = EvaluateC2(g, p, {.threads = 3});
  ASSERT_EQ(exact.size(), g.phi_deg.size());
  for (std::size_t k = 0; k < exact.size(); ++k) {
    ASSERT_EQ(exact[k].size(), static_cast<std::size_t>(g.n_frames * g.n_frames));
    EXPECT_EQ(exact[k], ref.c2[k]) << "angle " << k;  // bit for bit
    for (std::size_t i = 0; i < fast[k].size(); ++i) {
      ASSERT_LE(std::abs(fast[k][i] - ref.c2[k][i]), 1e-13 * std::abs(ref.c2[k][i]))
          << "angle " << k << " point " << i;
    }
  }
  EXPECT_EQ(ParameterNames(g.mode).size(), p.physical.size());
}

INSTANTIATE_TEST_SUITE_P(BothModes, ApiModel,
                         ::testing::Values(AnalysisMode::kStatic, AnalysisMode::kLaminarFlow),
                         [](const ::testing::TestParamInfo<AnalysisMode>& mode) {
                           return std::string(AnalysisModeName(mode.param));
                         });

TEST(ApiModelInput, WrongShapesAreBadInputNamingTheField) {
  const ModelGrid g = Grid(AnalysisMode::kStatic);
  const auto expect_bad = [](const ModelGrid& grid, const ModelParameters& p, const char* key) {
    try {
      EvaluateC2(grid, p);
      ADD_FAILURE() << "accepted; expected an error naming " << key;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_EQ(e.context().key, key) << e.what();
    }
  };
  ModelParameters p = Parameters(AnalysisMode::kLaminarFlow);  // 7 values for static
  expect_bad(g, p, "physical");
  p = Parameters(AnalysisMode::kStatic);
  p.offset.pop_back();
  expect_bad(g, p, "contrast/offset");
  ModelGrid one = g;
  one.n_frames = 1;
  expect_bad(one, Parameters(AnalysisMode::kStatic), "n_frames");
}

// The public options start where a YAML config with nothing set starts.
TEST(ApiOptions, DefaultsAreTheConfigDefaults) {
  config::ReadOptions no_file;
  no_file.require_data_file = false;
  const config::Config c = config::ReadConfigString("analysis_mode: static\n", "defaults", no_file);
  const NlsqOptions o;
  EXPECT_EQ(o.max_iterations, c.optimization.nlsq.max_iterations);
  EXPECT_EQ(o.ftol, c.optimization.nlsq.tolerance);
  EXPECT_EQ(o.xtol, c.optimization.nlsq.xtol);
  EXPECT_EQ(o.gtol, c.optimization.nlsq.gtol);
  EXPECT_EQ(o.stator_rotor_gap, c.analyzer.stator_rotor_gap);
  EXPECT_EQ(homodyne::config::ChoiceName(c.optimization.nlsq.anti_degeneracy.per_angle_mode),
            "auto");
  EXPECT_EQ(o.per_angle, PerAngleScaling::kAuto);
  EXPECT_EQ(o.mode, c.analysis_mode);
  EXPECT_NO_THROW(o.Validate());
  EXPECT_FALSE(std::string(Version()).empty());
}

TEST(ApiOptions, CmcDefaultsAreTheConfigDefaults) {
  config::ReadOptions no_file;
  no_file.require_data_file = false;
  const config::Config c = config::ReadConfigString("analysis_mode: static\n", "defaults", no_file);
  const config::CmcOptions& cmc = c.optimization.cmc;
  const CmcOptions o;
  EXPECT_EQ(o.mode, c.analysis_mode);
  EXPECT_EQ(o.stator_rotor_gap, c.analyzer.stator_rotor_gap);
  EXPECT_EQ(homodyne::config::ChoiceName(cmc.per_angle_mode), "auto");
  EXPECT_EQ(o.per_angle, PerAngleScaling::kAuto);
  EXPECT_FALSE(cmc.sharding.num_shards.has_value());
  EXPECT_EQ(o.shards, 0);
  EXPECT_EQ(o.chains, cmc.per_shard_mcmc.num_chains);
  EXPECT_EQ(o.warmup, cmc.per_shard_mcmc.num_warmup);
  EXPECT_EQ(o.draws, cmc.per_shard_mcmc.num_samples);
  EXPECT_EQ(o.seed, cmc.seed);
  EXPECT_EQ(o.target_accept, cmc.per_shard_mcmc.target_accept_prob);
  EXPECT_EQ(o.max_tree_depth, cmc.per_shard_mcmc.max_tree_depth);
  EXPECT_FALSE(o.nlsq_informed_priors.has_value());
  EXPECT_EQ(cmc.validation.use_nlsq_informed_priors, config::AutoSwitch::kAuto);
  EXPECT_NO_THROW(o.Validate());
}

}  // namespace
}  // namespace homodyne
