// Keys and shapes of earlier homodyne/xpcsjax versions and of their documentation's examples
// (src/config/earlier_keys.cpp) are read under today's keys, one note each; today's key wins
// when both are given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "config/choices.h"
#include "config/config_reader.h"

namespace homodyne::config {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

Config Read(const std::string& yaml) {
  ReadOptions options;
  options.strict = true;  // a key left unconverted would be an error
  options.require_data_file = false;
  return ReadConfigString(yaml, "earlier.yaml", options);
}

const EffectiveParameter& Param(const Config& c, const std::string& name) {
  const EffectiveParameter* p = c.FindParameter(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

bool AnyNote(const Config& c, const std::string& text) {
  return std::any_of(c.earlier_keys.begin(), c.earlier_keys.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(EarlierKeys, XpcsjaxQuickstartShape) {
  const Config c = Read(
      "analysis_settings: {analysis_mode: laminar_flow}\n"
      "analyzer_parameters:\n"
      "  temporal: {dt: 0.25, start_frame: 0, end_frame: 99}\n"
      "  scattering: {wavevector_q: 0.01}\n"
      "initial_parameters:\n"
      "  active: [D0, alpha]\n"
      "  values: {D0: 1234.0, alpha: -0.7, phi0: 12.0}\n"
      "parameter_bounds:\n"
      "  D0: [10.0, 1.0e5]\n"
      "  alpha: [-1.5, 0.5]\n");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.25);
  EXPECT_EQ(c.analyzer.start_frame, 1);  // xpcsjax's documented 0 is the first frame
  EXPECT_EQ(c.analyzer.end_frame, 99);
  EXPECT_DOUBLE_EQ(Param(c, "D0").initial, 1234.0);
  EXPECT_DOUBLE_EQ(Param(c, "phi0").initial, 12.0);
  EXPECT_DOUBLE_EQ(Param(c, "D0").min, 10.0);
  EXPECT_DOUBLE_EQ(Param(c, "alpha").max, 0.5);
  EXPECT_TRUE(Param(c, "D0").vary);
  EXPECT_FALSE(Param(c, "phi0").vary);  // not in `active`
  EXPECT_TRUE(AnyNote(c,
                      "analysis_settings.analysis_mode (xpcsjax's documentation examples) "
                      "read as analysis_mode"));
  EXPECT_TRUE(
      AnyNote(c, "analyzer_parameters.temporal.dt (xpcsjax) read as analyzer_parameters.dt"));
  EXPECT_TRUE(AnyNote(c, "start_frame: 1"));
  EXPECT_TRUE(AnyNote(c,
                      "parameter_bounds (xpcsjax's documentation) read as "
                      "parameter_space.bounds: D0, alpha"));
}

TEST(EarlierKeys, TodaysKeyWins) {
  const Config c = Read(
      "analysis_mode: static\n"
      "analyzer_parameters:\n"
      "  dt: 0.5\n"
      "  temporal: {dt: 0.1}\n"
      "  scattering: {wavevector_q: 0.01}\n"
      "parameter_space:\n"
      "  bounds: [{name: D0, min: 5, max: 50}]\n"
      "parameter_bounds: {D0: [1, 2], alpha: [-1, 1]}\n");
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.5);
  EXPECT_DOUBLE_EQ(Param(c, "D0").min, 5.0);
  EXPECT_DOUBLE_EQ(Param(c, "alpha").min, -1.0);
  EXPECT_TRUE(AnyNote(c,
                      "analyzer_parameters.temporal.dt (xpcsjax) not read: "
                      "analyzer_parameters.dt is also given and wins"));
  EXPECT_TRUE(AnyNote(c, "parameter_bounds of D0 not read"));
}

TEST(EarlierKeys, HomodyneExampleAndCmcShapes) {
  const Config c = Read(
      "parameter_space:\n"
      "  model: laminar_flow\n"
      "  bounds: [{name: gamma_dot_0, min: 1.0e-6, max: 0.5}]\n"
      "analyzer_parameters: {dt: 0.1, scattering: {wavevector_q: 0.01}}\n"
      "optimization_config:\n"
      "  angle_filtering:\n"
      "    enabled: true\n"
      "    target_ranges: [{min_angle: -5, max_angle: 5}]\n"
      "optimization:\n"
      "  cmc:\n"
      "    backend: {name: jax, enable_checkpoints: true}\n"
      "    sharding: {sharding_strategy: stratified}\n"
      "performance: {memory_limit_gb: auto}\n");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  EXPECT_DOUBLE_EQ(Param(c, "gamma_dot_t0").max, 0.5);
  EXPECT_TRUE(c.phi_filtering.enabled);
  ASSERT_EQ(c.phi_filtering.target_ranges.size(), 1u);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[0].max_angle, 5.0);
  EXPECT_EQ(homodyne::config::ChoiceName(c.optimization.cmc.sharding.strategy), "stratified");
  EXPECT_TRUE(AnyNote(c, "read as backend: jax; its enable_checkpoints are not used"));
  EXPECT_TRUE(AnyNote(c, "performance.memory_limit_gb: auto"));
}

// homodyne's sampler keys of 2025 (optimization.mcmc) and its CMC-only templates of December
// 2025 (the CMC sections under optimization.mcmc), and its first streaming optimizer's keys.
TEST(EarlierKeys, HomodyneMcmcAndStreamingShapes) {
  const Config c = Read(
      "analysis_mode: static\n"
      "analyzer_parameters: {dt: 0.1, scattering: {wavevector_q: 0.01}}\n"
      "optimization:\n"
      "  mcmc:\n"
      "    min_ess: 250\n"
      "    max_rhat: 1.05\n"
      "    init_strategy: median\n"
      "    sharding: {strategy: contiguous, num_shards: 3, seed_base: 11}\n"
      "    combination: {method: weighted_gaussian, min_success_rate: 0.7}\n"
      "    per_shard_mcmc: {num_warmup: 123, target_accept_prob: 0.93, max_tree_depth: 7}\n"
      "    validation: {max_between_shard_kl: 0.25}\n"
      "  cmc:\n"
      "    sharding: {num_shards: 5}\n"
      "  streaming:\n"
      "    max_epochs: 3\n"
      "    validate_numerics: false\n");
  const auto& cmc = c.optimization.cmc;
  EXPECT_DOUBLE_EQ(cmc.per_shard_mcmc.target_accept_prob, 0.93);
  EXPECT_EQ(cmc.per_shard_mcmc.max_tree_depth, 7);
  EXPECT_EQ(cmc.per_shard_mcmc.num_warmup, 123);
  EXPECT_DOUBLE_EQ(cmc.validation.min_per_shard_ess, 250.0);
  EXPECT_DOUBLE_EQ(cmc.validation.max_per_shard_rhat, 1.05);
  EXPECT_DOUBLE_EQ(cmc.validation.max_between_shard_kl, 0.25);
  EXPECT_EQ(homodyne::config::ChoiceName(cmc.sharding.strategy), "contiguous");
  EXPECT_EQ(cmc.sharding.seed_base, 11);
  EXPECT_EQ(cmc.sharding.num_shards, 5);  // optimization.cmc's own value wins
  EXPECT_DOUBLE_EQ(cmc.combination.min_success_rate, 0.7);
  EXPECT_TRUE(AnyNote(c,
                      "optimization.mcmc.min_ess (homodyne's NUTS check of 2025) read as "
                      "optimization.cmc.validation.min_per_shard_ess"));
  EXPECT_TRUE(AnyNote(c,
                      "optimization.mcmc.sharding.{strategy, seed_base} (homodyne's CMC "
                      "templates of December 2025) read as optimization.cmc.sharding.*"));
  EXPECT_TRUE(AnyNote(c,
                      "optimization.mcmc.sharding.{num_shards} (homodyne's CMC templates of "
                      "December 2025) not read: optimization.cmc.sharding gives them"));
  EXPECT_TRUE(AnyNote(c,
                      "optimization.streaming.max_epochs (homodyne's streaming template of "
                      "2025) read as optimization.nlsq.hybrid_streaming.warmup_iterations"));
  EXPECT_TRUE(AnyNote(c, "optimization.streaming.validate_numerics"));
  // Each key once.
  for (std::size_t i = 0; i < c.earlier_keys.size(); ++i) {
    for (std::size_t j = i + 1; j < c.earlier_keys.size(); ++j) {
      EXPECT_NE(c.earlier_keys[i], c.earlier_keys[j]);
    }
  }
}

TEST(EarlierKeys, OneLinePerKey) {
  const Config c = Read(
      "analysis_mode: static\n"
      "analyzer_parameters:\n"
      "  temporal: {dt: 0.25, start_frame: 0}\n"
      "  scattering: {wavevector_q: 0.01}\n");
  const auto about_start = std::count_if(
      c.earlier_keys.begin(), c.earlier_keys.end(),
      [](const std::string& n) { return n.find("temporal.start_frame") != std::string::npos; });
  EXPECT_EQ(about_start, 1);
  EXPECT_EQ(c.analyzer.start_frame, 1);
}

TEST(EarlierKeys, StaticModeFlagAndFileNameAlone) {
  const Config c = Read(
      "analysis_settings: {static_mode: true, isotropic_mode: true}\n"
      "analyzer_parameters: {dt: 0.1, scattering: {wavevector_q: 0.01}}\n"
      "experimental_data: {data_file_name: run.h5}\n");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kStatic);
  EXPECT_EQ(c.analysis_mode_name, "static_isotropic");
  EXPECT_EQ(c.experimental_data.DataFile(), "./run.h5");
  EXPECT_TRUE(AnyNote(c, "in the current folder"));
}

TEST(EarlierKeys, NoteFreeForTodaysConfig) {
  const Config c = Read(
      "analysis_mode: static\n"
      "analyzer_parameters: {dt: 0.1, start_frame: 1, scattering: {wavevector_q: 0.01}}\n"
      "experimental_data: {data_folder_path: ./, data_file_name: run.h5}\n");
  EXPECT_TRUE(c.earlier_keys.empty());
}

}  // namespace
}  // namespace homodyne::config
