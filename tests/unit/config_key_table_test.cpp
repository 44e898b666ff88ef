// The key table: structure, coverage of spec §3, defaults that pass validation, and the
// generated reference documentation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/choices.h"
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

// The bounds entries echo each parameter's resolved prior (the one CMC samples under):
// parameter_space.priors wins over the bounds entry's prior_mu/prior_sigma, and a parameter
// with no prior of its own gets the default centre and width of its range.
TEST(ConfigKeyTable, EffectiveConfigEchoesTheResolvedPriors) {
  const Config c = ReadConfigString(
      "analysis_mode: static\n"
      "experimental_data: {data_folder_path: ./d/, data_file_name: x.hdf}\n"
      "parameter_space:\n"
      "  bounds:\n"
      "    - {name: D0, min: 100.0, max: 5000.0, prior_mu: 1000.0, prior_sigma: 10.0}\n"
      "    - {name: alpha, min: -1.0, max: 1.0}\n"
      "  priors:\n"
      "    D0: {dist_type: Normal, mu: 2000.0, sigma: 20.0}\n",
      "priors.yaml");
  ASSERT_DOUBLE_EQ(c.FindParameter("D0")->prior.mu, 2000.0);
  const std::string echo = EffectiveConfigYaml(c);
  const YAML::Node bounds = YAML::Load(echo)["parameter_space"]["bounds"];
  bool saw_d0 = false, saw_alpha = false;
  for (const auto& b : bounds) {
    const std::string name = b["name"].as<std::string>();
    if (name == "D0") {
      saw_d0 = true;
      EXPECT_EQ(b["type"].as<std::string>(), "Normal") << echo;
      EXPECT_DOUBLE_EQ(b["prior_mu"].as<double>(), 2000.0) << echo;
      EXPECT_DOUBLE_EQ(b["prior_sigma"].as<double>(), 20.0) << echo;
    } else if (name == "alpha") {
      saw_alpha = true;
      EXPECT_DOUBLE_EQ(b["prior_mu"].as<double>(), 0.0) << echo;
      EXPECT_DOUBLE_EQ(b["prior_sigma"].as<double>(), 0.5) << echo;
    }
  }
  EXPECT_TRUE(saw_d0 && saw_alpha) << echo;
  Config again;
  ASSERT_NO_THROW(again = ReadConfigString(echo, "echo.yaml")) << echo;
  for (const auto* name : {"D0", "alpha", "D_offset"}) {
    EXPECT_EQ(again.FindParameter(name)->prior.type, c.FindParameter(name)->prior.type) << name;
    EXPECT_DOUBLE_EQ(again.FindParameter(name)->prior.mu, c.FindParameter(name)->prior.mu) << name;
    EXPECT_DOUBLE_EQ(again.FindParameter(name)->prior.sigma, c.FindParameter(name)->prior.sigma)
        << name;
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

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "missing " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigKeyTable, MigratingDocMatchesTheTable) {
  const std::string doc = ReadText(std::string(HOMODYNE_SOURCE_DIR) + "/docs/migrating.md");
  const std::string begin = "<!-- BEGIN generated: homodyne-config --migration-keys -->\n";
  const std::string end = "<!-- END generated: homodyne-config --migration-keys -->";
  const std::size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), RenderMigrationKeyTableMarkdown())
      << "docs/migrating.md's key table is stale: run scripts/update-migrating-keys.sh";
}

// Every key of homodyne's and xpcsjax's current templates (the corpus's copies of their
// shapes) has its row in docs/migrating.md's key table: its own, or its section's where the
// section takes any content, or its earlier key's.
void CollectKeys(const YAML::Node& node, const std::string& path, std::vector<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = (path.empty() ? "" : path + ".") + kv.first.Scalar();
      out.push_back(key);
      CollectKeys(kv.second, key, out);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (node[i].IsMap()) CollectKeys(node[i], path + "[" + std::to_string(i) + "]", out);
    }
  }
}

TEST(ConfigKeyTable, EveryKeyOfTheCurrentTemplatesIsInTheMigrationTable) {
  const std::string md = RenderMigrationKeyTableMarkdown();
  const std::string dir = std::string(HOMODYNE_SOURCE_DIR) + "/tests/compat/";
  for (const char* file :
       {"homodyne_static_v2.23.yaml", "homodyne_laminar_flow_v2.23.yaml",
        "homodyne_master_v2.23.yaml", "xpcsjax_static_isotropic_current.yaml",
        "xpcsjax_static_anisotropic_current.yaml", "xpcsjax_laminar_flow_current.yaml",
        "xpcsjax_two_component_current.yaml"}) {
    std::vector<std::string> keys;
    CollectKeys(YAML::LoadFile(dir + file), "", keys);
    ASSERT_GT(keys.size(), 50u) << file;
    std::vector<std::string> free_sections;  // any content below these
    for (const std::string& key : keys) {
      const bool below_free =
          std::any_of(free_sections.begin(), free_sections.end(),
                      [&](const std::string& s) { return key.rfind(s + ".", 0) == 0; });
      if (below_free) continue;
      const KeySpec* spec = ResolveKeySpec(key);
      if (spec != nullptr) {
        EXPECT_THAT(md, HasSubstr("| `" + spec->path + "` |")) << file << ": " << key;
        if (spec->type == KeyType::kAnyMapping || spec->type == KeyType::kAny) {
          free_sections.push_back(key);
        }
        continue;
      }
      if (md.find("| `" + key + "` (") != std::string::npos) continue;  // an earlier key
      // Below an open section or a wildcard (logger names are dotted): the section's row.
      const KeySpec* parent = nullptr;
      for (std::string up = key; parent == nullptr && up.find('.') != std::string::npos;) {
        up = up.substr(0, up.rfind('.'));
        parent = ResolveKeySpec(up);
      }
      const bool wildcard = parent != nullptr && parent->path.size() > 2 &&
                            parent->path.compare(parent->path.size() - 2, 2, ".*") == 0;
      const bool covered =
          parent != nullptr && (parent->open() || wildcard || parent->type == KeyType::kAnyMapping);
      EXPECT_TRUE(covered) << file << ": " << key << " has no row";
      if (covered) {
        EXPECT_THAT(md, HasSubstr("| `" + parent->path + "` |")) << key;
      }
    }
  }
}

// A bound key's value as YAML text (nested mappings) under a minimal static file.
std::string YamlSetting(const std::string& path, const std::string& value) {
  std::string out = "analysis_mode: static_isotropic\n";
  std::size_t pos = 0;
  std::string indent;
  while (true) {
    const std::size_t dot = path.find('.', pos);
    if (dot == std::string::npos) break;
    out += indent + path.substr(pos, dot - pos) + ":\n";
    indent += "  ";
    pos = dot + 1;
  }
  return out + indent + path.substr(pos) + ": " + value + "\n";
}

// A valid value of the key that differs from its table default.
std::string OtherValue(const KeySpec& spec) {
  switch (spec.type) {
    case KeyType::kBool:
      return spec.default_yaml == "true" ? "false" : "true";
    case KeyType::kBoolOrAuto:
      return "true";
    case KeyType::kInt:
    case KeyType::kIntOrAuto:
      for (const char* v : {"7", "3"}) {
        if (v != spec.default_yaml && CheckNumber(spec.rule, std::stod(v)).empty()) return v;
      }
      break;
    case KeyType::kFloat:
      for (const char* v : {"0.7", "1.7"}) {
        if (CheckNumber(spec.rule, std::stod(v)).empty()) return v;
      }
      break;
    case KeyType::kString:
      if (spec.rule.kind != Rule::Kind::kEnum) return "other_value";
      for (const auto& choice : spec.rule.choices) {
        if (choice != spec.default_yaml) return choice;
      }
      break;
    case KeyType::kFloatList:
      return "[0.5, 0.6, 0.7]";  // three entries: as many as the static mode's parameters
    default:
      break;
  }
  ADD_FAILURE() << "no test value for " << spec.path;
  return spec.default_yaml;
}

std::vector<const KeySpec*> BoundKeys() {
  std::vector<const KeySpec*> out;
  for (const auto& spec : ConfigKeyTable()) {
    if (spec.field) out.push_back(&spec);
  }
  return out;
}

ReadOptions NoDataFile() {
  ReadOptions o;
  o.require_data_file = false;
  return o;
}

// The defaulted Config is what the reader makes of a file that sets no key.
TEST(ConfigKeyBindings, DefaultConfigIsTheReaderOnAnEmptyFile) {
  const Config d = DefaultConfig();
  const Config r =
      ReadConfigString("analysis_mode: static_isotropic\n", "empty.yaml", NoDataFile());
  ASSERT_GT(BoundKeys().size(), 100u);
  for (const KeySpec* spec : BoundKeys()) {
    EXPECT_EQ(spec->field.text(d), spec->field.text(r)) << spec->path;
  }
  EXPECT_EQ(d.analysis_mode, r.analysis_mode);
  EXPECT_EQ(d.analysis_mode_name, "static_isotropic");
  EXPECT_EQ(d.analyzer.dt, r.analyzer.dt);
  EXPECT_EQ(d.analyzer.dt_source, r.analyzer.dt_source);
  EXPECT_EQ(d.analyzer.stator_rotor_gap, r.analyzer.stator_rotor_gap);
  EXPECT_EQ(d.analyzer.stator_rotor_gap_source, r.analyzer.stator_rotor_gap_source);
  EXPECT_EQ(d.optimization.nlsq.anti_degeneracy.section_present,
            r.optimization.nlsq.anti_degeneracy.section_present);
  ASSERT_EQ(d.parameters.size(), r.parameters.size());
  for (std::size_t i = 0; i < d.parameters.size(); ++i) {
    EXPECT_EQ(d.parameters[i].name, r.parameters[i].name);
    EXPECT_EQ(d.parameters[i].min, r.parameters[i].min);
    EXPECT_EQ(d.parameters[i].max, r.parameters[i].max);
    EXPECT_EQ(d.parameters[i].initial, r.parameters[i].initial);
  }
  EXPECT_EQ(d.contrast.max, r.contrast.max);
  EXPECT_EQ(d.offset.min, r.offset.min);
  // A few table defaults, spelled out.
  EXPECT_EQ(d.optimization.method, FitMethod::kNlsq);
  EXPECT_EQ(d.optimization.nlsq.max_iterations, 1000);
  EXPECT_EQ(d.optimization.nlsq.tolerance, 1e-8);
  EXPECT_FALSE(d.optimization.nlsq.memory_threshold_gb.has_value());
  EXPECT_EQ(d.optimization.cmc.enable, AutoSwitch::kAuto);
  EXPECT_EQ(d.optimization.cmc.min_points_for_cmc, 100000);
  EXPECT_FALSE(d.optimization.cmc.sharding.num_shards.has_value());
  EXPECT_EQ(d.optimization.cmc.per_shard_mcmc.num_samples, 1500);
  EXPECT_EQ(d.experimental_data.cache_filename_template,
            "cached_c2_frames_${start_frame}_${end_frame}.npz");
  EXPECT_EQ(d.analyzer.end_frame, -1);
  EXPECT_EQ(d.output_directory, "./homodyne_results");
  EXPECT_EQ(d.Hdf5DeflateLevel(), 0);  // uncompressed (docs/outputs.md)
  EXPECT_EQ(d.compression_level, 4);
  EXPECT_EQ(ChoiceName(d.fitted_data), "model");
  EXPECT_EQ(homodyne::config::ChoiceName(d.optimization.nlsq.anti_degeneracy.hierarchical_trigger),
            "suspect");
  EXPECT_EQ(d.analyzer.dt, 1.0);
  EXPECT_EQ(d.analyzer.stator_rotor_gap, 2.0e6);
}

// Each bound key fills its own field and no other: setting it alone changes exactly one
// bound field of the Config (a key bound to the wrong member fails here).
TEST(ConfigKeyBindings, EachKeyFillsItsOwnField) {
  const Config d = DefaultConfig();
  const auto bound = BoundKeys();
  for (const KeySpec* spec : bound) {
    const std::string yaml = YamlSetting(spec->path, OtherValue(*spec));
    Config c;
    ASSERT_NO_THROW(c = ReadConfigString(yaml, "one_key.yaml", NoDataFile())) << yaml;
    EXPECT_NE(spec->field.text(c), spec->field.text(d)) << yaml;
    for (const KeySpec* other : bound) {
      // output.layout: auto follows what the file holds, and a key only xpcsjax writes
      // (scaling.*) makes it xpcsjax's (config_xpcsjax_test).
      if (other == spec || other->path == "output.layout") continue;
      EXPECT_EQ(other->field.text(c), other->field.text(d))
          << "setting " << spec->path << " changed " << other->path;
    }
  }
}

// Elements of lists and wildcard mappings are built by explicit code; their structs keep the
// table's defaults in-class, which must stay equal.
TEST(ConfigKeyBindings, ElementDefaultsAreTheTables) {
  EXPECT_EQ(ChoiceName(ParameterBound{}.prior_type),
            FindKeySpec("parameter_space.bounds[].type")->default_yaml);
  EXPECT_EQ(ChoiceName(PriorSpec{}.dist_type),
            FindKeySpec("parameter_space.priors.*.dist_type")->default_yaml);
}

// A used scalar key either fills a typed field through the table or is read by explicit
// code (fallback chains, name lists, overrides, lookups); a new key has to pick one.
TEST(ConfigKeyBindings, UsedScalarKeysAreBoundOrReadExplicitly) {
  std::set<std::string> explicit_keys = {
      "phi_filtering.fallback_to_all_angles",  // config_bridge.cpp: LoadOptionsFromConfig
      "analysis_mode",                         // two fields: the name as written and the mode
      "analyzer_parameters.dt",
      "experimental_data.dt",  // dt fallback chain
      "analyzer_parameters.geometry.stator_rotor_gap",
      "experimental_data.geometry.stator_rotor_gap",
      "experimental_data.sample_detector_distance",  // gap fallback chain
      "initial_parameters.parameter_names",
      "initial_parameters.active_parameters",  // canonical names, checked against the mode
      "optimization.mcmc.num_warmup",
      "optimization.mcmc.num_samples",
      "optimization.mcmc.num_chains",         // overrides of per_shard_mcmc
      "optimization.mcmc.dense_mass_matrix",  // the CMC metric, with the command line's flag
      // No typed field: no code of homodyne-hpc reads data_filtering.
      "data_filtering.enabled",
      "data_filtering.q_range.min",
      "data_filtering.q_range.max",
      "data_filtering.phi_range.min",
      "data_filtering.phi_range.max",
      "data_filtering.quality_threshold",
      "data_filtering.frame_filtering.stride",
      "data_filtering.combine_criteria",
      "data_filtering.fallback_on_empty",
  };
  // xpcsjax's flat optimization.nlsq keys fill the field of their nested key.
  for (const auto& [flat, nested] : detail::FlatNlsqKeys()) explicit_keys.insert(flat);
  for (const auto& spec : ConfigKeyTable()) {
    const bool scalar = spec.type != KeyType::kMapping && spec.type != KeyType::kAnyMapping &&
                        spec.type != KeyType::kMappingList && spec.type != KeyType::kAny;
    const bool concrete = spec.path.find_first_of("*[") == std::string::npos;
    if (spec.status != KeyStatus::kUsed || !scalar || !concrete) continue;
    EXPECT_NE(static_cast<bool>(spec.field), explicit_keys.count(spec.path) > 0) << spec.path;
  }
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
  EXPECT_EQ(homodyne::config::ChoiceName(again.optimization.nlsq.anti_degeneracy.per_angle_mode),
            "fourier");
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
