// The key table: structure, coverage of spec §3, defaults that pass validation, and the
// generated reference documentation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "config/config_reader.h"
#include "config/key_table.h"
#include "test_data.h"

namespace homodyne::config {
namespace {

using ::testing::HasSubstr;

std::string ParentOf(const std::string& path) {
  if (path.size() > 2 && path.compare(path.size() - 2, 2, "[]") == 0) {
    return path.substr(0, path.size() - 2);
  }
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos) return {};
  std::string parent = path.substr(0, dot);
  return parent;
}

TEST(ConfigKeyTable, PathsAreUniqueAndParentsAreDeclaredFirst) {
  std::set<std::string> seen;
  for (const auto& spec : ConfigKeyTable()) {
    EXPECT_TRUE(seen.insert(spec.path).second) << "duplicate " << spec.path;
    EXPECT_FALSE(spec.description.empty()) << spec.path;
    std::string parent = ParentOf(spec.path);
    if (parent.empty()) continue;
    bool list_element = false;
    if (parent.size() > 2 && parent.compare(parent.size() - 2, 2, "[]") == 0) {
      parent.resize(parent.size() - 2);
      list_element = true;
    }
    const KeySpec* p = FindKeySpec(parent);
    ASSERT_NE(p, nullptr) << "parent of " << spec.path << " is not declared";
    EXPECT_TRUE(seen.count(parent)) << parent << " must come before " << spec.path;
    EXPECT_EQ(p->type, list_element ? KeyType::kMappingList : KeyType::kMapping) << spec.path;
  }
}

TEST(ConfigKeyTable, CoversTheSectionsOfTheSpec) {
  for (const char* path : {
           "metadata",
           "metadata.config_version",
           "analysis_mode",
           "analyzer_parameters.dt",
           "analyzer_parameters.start_frame",
           "analyzer_parameters.end_frame",
           "analyzer_parameters.scattering.wavevector_q",
           "analyzer_parameters.geometry.stator_rotor_gap",
           "analysis_settings.model_description.type",
           "experimental_data.data_folder_path",
           "experimental_data.data_file_name",
           "experimental_data.cache_filename_template",
           "experimental_data.geometry.stator_rotor_gap",
           "experimental_data.sample_detector_distance",
           "experimental_data.dt",
           "q_tolerance_fraction",
           "phi_filtering.target_ranges[].min_angle",
           "phi_filtering.quality_control.require_orthogonal_angles",
           "initial_parameters.per_angle_scaling.contrast",
           "initial_parameters.fixed_parameters.*",
           "parameter_space.bounds[].prior_sigma",
           "parameter_space.priors.*.max_val",
           "optimization.method",
           "optimization.nlsq.max_iterations",
           "optimization.nlsq.x_scale_map.*",
           "optimization.nlsq.progress.log_interval",
           "optimization.nlsq.diagnostics.sample_size",
           "optimization.nlsq.hybrid_streaming.max_warmup_step_size",
           "optimization.nlsq.anti_degeneracy.per_angle_mode",
           "optimization.nlsq.anti_degeneracy.hierarchical.per_angle_max_iterations",
           "optimization.nlsq.anti_degeneracy.regularization.auto_tune_lambda",
           "optimization.nlsq.anti_degeneracy.gradient_monitoring.response",
           "optimization.nlsq.anti_degeneracy.shear_weighting.update_frequency",
           "optimization.nlsq.multi_start.degeneracy_threshold",
           "optimization.nlsq.cmaes.diagonal_filtering",
           "optimization.nlsq.quality_validation.bounds_tolerance",
           "optimization.streaming.adaptive_batching",
           "optimization.stratification.log_diagnostics",
           "optimization.sequential.weighting",
           "optimization.recovery.log_retries",
           "optimization.mcmc.initial_values",
           "optimization.cmc.backend_config.resume_from_checkpoint",
           "optimization.cmc.sharding.min_points_per_param",
           "optimization.cmc.combination.min_success_rate_warning",
           "optimization.cmc.per_shard_mcmc.jax_profile_dir",
           "optimization.cmc.validation.heterogeneity_abort",
           "optimization.cmc.reparameterization.bimodal_min_separation",
           "noise_estimation.adam_config",
           "performance.computation.vectorization_level",
           "logging.file.backup_count",
           "logging.modules.*",
           "quality_control.enabled",
           "plotting.matplotlib",
           "output.formats.csv",
           "output.plots.color_scale.fixed_max",
           "validation.check_file_existence",
           "v2_features.cache_strategy",
           "data_filtering.frame_filtering.stride",
           "preprocessing.save_provenance",
       }) {
    EXPECT_NE(FindKeySpec(path), nullptr) << path;
  }
  EXPECT_GT(ConfigKeyTable().size(), 300u);
}

TEST(ConfigKeyTable, ResolvesConcretePaths) {
  EXPECT_EQ(ResolveKeySpec("parameter_space.bounds[3].min")->path, "parameter_space.bounds[].min");
  EXPECT_EQ(ResolveKeySpec("logging.modules.homodyne")->path, "logging.modules.*");
  EXPECT_EQ(ResolveKeySpec("parameter_space.priors.D0.mu")->path, "parameter_space.priors.*.mu");
  EXPECT_EQ(ResolveKeySpec("analyzer_parameters.dt")->type, KeyType::kFloat);
  EXPECT_EQ(ResolveKeySpec("analyzer_parameters.dtt"), nullptr);
}

TEST(ConfigKeyTable, RulesCheckValues) {
  EXPECT_TRUE(CheckNumber(Positive(), 1e-300).empty());
  EXPECT_FALSE(CheckNumber(Positive(), 0.0).empty());
  EXPECT_TRUE(CheckNumber(InRange(0, 1), 1.0).empty());
  EXPECT_FALSE(CheckNumber(Fraction(), 0.0).empty());
  EXPECT_TRUE(CheckString(OneOf({"static", "laminar_flow"}, true), "LAMINAR_FLOW").empty());
  EXPECT_FALSE(CheckString(OneOf({"auto", "fourier"}), "Auto").empty());
}

// Every default, echoed by EffectiveConfigYaml, passes the reader's own validation, and the
// echo reproduces the effective values.
TEST(ConfigKeyTable, DefaultsRoundTripThroughTheEffectiveConfig) {
  for (const char* mode : {"static", "laminar_flow"}) {
    const Config c = ReadConfigString(
        std::string("analysis_mode: ") + mode +
            "\nexperimental_data: {data_folder_path: ./d/, data_file_name: x.hdf}\n",
        "defaults.yaml");
    const std::string echo = EffectiveConfigYaml(c);
    Config again;
    ASSERT_NO_THROW(again = ReadConfigString(echo, "echo.yaml")) << echo;
    ASSERT_EQ(again.parameters.size(), c.parameters.size());
    for (std::size_t i = 0; i < c.parameters.size(); ++i) {
      EXPECT_EQ(again.parameters[i].name, c.parameters[i].name);
      EXPECT_DOUBLE_EQ(again.parameters[i].min, c.parameters[i].min);
      EXPECT_DOUBLE_EQ(again.parameters[i].max, c.parameters[i].max);
      EXPECT_DOUBLE_EQ(again.parameters[i].initial, c.parameters[i].initial);
    }
    EXPECT_DOUBLE_EQ(again.analyzer.dt, c.analyzer.dt);
    EXPECT_EQ(again.optimization.nlsq.max_iterations, 1000);
    EXPECT_EQ(again.optimization.cmc.per_shard_mcmc.num_samples, 1500);
    EXPECT_DOUBLE_EQ(again.contrast.max, 1.0);
    // Every concrete (non-wildcard) key appears in the echo.
    for (const auto& spec : ConfigKeyTable()) {
      if (spec.path.find_first_of("*[") != std::string::npos) continue;
      const std::string leaf = spec.path.substr(spec.path.rfind('.') + 1);
      EXPECT_THAT(echo, HasSubstr(leaf + ":")) << spec.path;
    }
  }
}

TEST(ConfigKeyTable, MarkdownReferenceCoversEveryKey) {
  const std::string md = RenderConfigReferenceMarkdown();
  for (const auto& spec : ConfigKeyTable()) {
    EXPECT_THAT(md, HasSubstr("| `" + spec.path + "` |")) << spec.path;
  }
  EXPECT_THAT(md, HasSubstr("## `optimization`"));
}

TEST(ConfigKeyTable, CommittedDocsMatchTheTable) {
  const std::string path = std::string(HOMODYNE_SOURCE_DIR) + "/docs/configuration.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing " << path;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), RenderConfigReferenceMarkdown())
      << "docs/configuration.md is stale: regenerate it with "
         "`homodyne-config --reference-doc > docs/configuration.md`";
}

}  // namespace
}  // namespace homodyne::config

namespace homodyne::config {
namespace {

// The echo of a file that sets almost every key reproduces it, including free-form
// sections whose names contain dots.
TEST(ConfigKeyTable, MasterConfigRoundTripsThroughTheEffectiveConfig) {
  const Config c = ReadConfigFile(testing::TestDataPath("configs/master.yaml"));
  const std::string echo = EffectiveConfigYaml(c);
  Config again;
  ASSERT_NO_THROW(again = ReadConfigString(echo, "echo.yaml")) << echo;
  EXPECT_EQ(again.analysis_mode, AnalysisMode::kLaminarFlow);
  EXPECT_EQ(again.logging.modules.at("homodyne.core"), "WARNING");
  EXPECT_EQ(again.optimization.nlsq.anti_degeneracy.per_angle_mode, "fourier");
  EXPECT_EQ(again.optimization.cmc.sharding.num_shards, 8);
  EXPECT_EQ(again.optimization.cmc.per_shard_mcmc.num_warmup, 1000);
  EXPECT_DOUBLE_EQ(again.FindParameter("gamma_dot_t0")->initial, 0.002);
  EXPECT_DOUBLE_EQ(again.FindParameter("phi0")->min, -20.0);
  EXPECT_DOUBLE_EQ(again.contrast.min, 0.05);
  EXPECT_EQ(ConfigString(again, "performance.computation.vectorization_level"), "high");
  EXPECT_THAT(echo, HasSubstr("figure.figsize"));
  EXPECT_THAT(echo, HasSubstr("sample_name"));  // undeclared key of the open metadata section
}

}  // namespace
}  // namespace homodyne::config
