// homodyne-config: templates validate with homodyne's template values, atomic writes,
// the --validate summary and exit codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "app/config_tool.h"
#include "config/config_reader.h"
#include "config/config_template.h"
#include "config/key_table.h"
#include "core/errors.h"
#include "temp_dir.h"

namespace homodyne::config {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A unique temporary directory per test, removed at its end.
class TempDir : public testing::ScopedTempDir {
 public:
  TempDir() : ScopedTempDir("config_tool") {}
  std::string File(const std::string& name) const { return file(name); }
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunTool(const std::vector<std::string>& args) {
  std::vector<std::string> all(args.size() + 1);
  all[0] = "homodyne-config";
  std::copy(args.begin(), args.end(), all.begin() + 1);
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  return HomodyneConfigMain(static_cast<int>(argv.size()), argv.data());
}

TEST(ConfigTool, StaticTemplateValidatesWithTemplateValues) {
  const Config c = ReadConfigString(ConfigTemplate(AnalysisMode::kStatic), "static template");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kStatic);
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.001);
  EXPECT_EQ(c.analyzer.end_frame, 2000);
  EXPECT_EQ(c.parameters.size(), 3u);
  EXPECT_DOUBLE_EQ(c.FindParameter("D0")->min, 1e2);
  EXPECT_DOUBLE_EQ(c.FindParameter("D0")->initial, 50050.0);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[1].min_angle, 170.0);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[1].max_angle, -170.0);
  EXPECT_FALSE(c.optimization.nlsq.anti_degeneracy.enable);
  EXPECT_EQ(c.optimization.nlsq.max_iterations, 100);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_samples, 3000);
  EXPECT_DOUBLE_EQ(*c.parameter_space.priors.at("contrast").mu, 0.06);
  EXPECT_DOUBLE_EQ(*c.parameter_space.bounds[1].prior_mu, -1.2);
}

TEST(ConfigTool, LaminarTemplateValidatesWithTemplateValues) {
  const Config c = ReadConfigString(ConfigTemplate(AnalysisMode::kLaminarFlow), "flow template");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  ASSERT_EQ(c.parameters.size(), 7u);
  EXPECT_DOUBLE_EQ(c.FindParameter("gamma_dot_t0")->min, 1e-6);
  EXPECT_DOUBLE_EQ(c.FindParameter("gamma_dot_t_offset")->max, 0.1);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[1].min_angle, 85.0);
  EXPECT_TRUE(c.optimization.nlsq.anti_degeneracy.enable);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_warmup, 500);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 2);
  EXPECT_DOUBLE_EQ(c.optimization.cmc.combination.min_success_rate, 0.8);
  EXPECT_DOUBLE_EQ(*c.parameter_space.priors.at("contrast").mu, 0.27);
}

TEST(ConfigTool, WritesAtomicallyAndRefusesToOverwrite) {
  TempDir dir;
  const std::string file = dir.File("cfg.yaml");
  WriteConfigFile(file, "first\n", false);
  EXPECT_EQ(Slurp(file), "first\n");
  try {
    WriteConfigFile(file, "second\n", false);
    ADD_FAILURE() << "overwrote without permission";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_THAT(e.what(), HasSubstr("--force"));
  }
  EXPECT_EQ(Slurp(file), "first\n");
  WriteConfigFile(file, "second\n", true);
  EXPECT_EQ(Slurp(file), "second\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
}

TEST(ConfigTool, CommandLineWritesValidatesAndReportsErrors) {
  TempDir dir;
  const std::string file = dir.File("flow.yaml");
  EXPECT_EQ(RunTool({"--mode", "laminar_flow", "-o", file}), 0);
  EXPECT_EQ(RunTool({"--mode", "laminar_flow", "-o", file}), 2);  // exists
  EXPECT_EQ(RunTool({"--mode", "laminar_flow", "-o", file, "--force"}), 0);
  EXPECT_EQ(RunTool({"--validate", file}), 0);
  EXPECT_EQ(RunTool({"--validate", file, "--check-data"}), 2);  // sample data file absent
  const std::string bad = dir.File("bad.yaml");
  std::ofstream(bad) << "analysis_mode: static\nanalyzer_parameters:\n  dt: -1\n";
  EXPECT_EQ(RunTool({"--validate", bad}), 2);
  // An unknown key is a warning, an error with --strict; a config without a data path
  // validates (the fit takes --data-file).
  const std::string unknown = dir.File("unknown.yaml");
  std::ofstream(unknown) << "analysis_mode: static\nanalyzer_parameters:\n  dtt: 1\n";
  EXPECT_EQ(RunTool({"--validate", unknown}), 0);
  EXPECT_EQ(RunTool({"--validate", unknown, "--strict"}), 2);
  EXPECT_EQ(RunTool({"--mode", "turbulent"}), 2);
  EXPECT_EQ(RunTool({}), 2);
}

TEST(ConfigTool, SummaryNamesModeDataParametersAndMethod) {
  const Config c = ReadConfigString(ConfigTemplate(AnalysisMode::kLaminarFlow), "flow.yaml");
  const std::string summary = FormatConfigSummary(c, true);
  EXPECT_THAT(summary, HasSubstr("laminar_flow"));
  EXPECT_THAT(summary, HasSubstr("./data/sample/sample_data.hdf (NOT FOUND)"));
  EXPECT_THAT(summary, HasSubstr("gamma_dot_t_offset"));
  EXPECT_THAT(summary, HasSubstr("method        : nlsq"));
  EXPECT_THAT(summary, HasSubstr("NLSQ auto"));
  EXPECT_THAT(summary, HasSubstr("metadata.config_version"));  // accepted keys at -v
  EXPECT_EQ(DefaultTemplateFileName(AnalysisMode::kStatic), "homodyne_static_config.yaml");
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("held at its initial value")));
  Config held = c;
  held.parameters.at(2).vary = false;
  const std::string held_summary = FormatConfigSummary(held, false);
  EXPECT_THAT(held_summary, ::testing::ContainsRegex("D_offset .*held at its initial value"));
}

}  // namespace
}  // namespace homodyne::config

namespace homodyne::config {
namespace {

// The templates shipped in examples/ are exactly what `homodyne-config --mode` writes.
TEST(ConfigTool, ShippedExamplesMatchTheGenerator) {
  for (AnalysisMode mode : {AnalysisMode::kStatic, AnalysisMode::kLaminarFlow}) {
    const std::string path =
        std::string(HOMODYNE_SOURCE_DIR) + "/examples/" + DefaultTemplateFileName(mode);
    EXPECT_EQ(Slurp(path), ConfigTemplate(mode))
        << path << " is stale: regenerate with homodyne-config --mode " << ToString(mode) << " -o "
        << path << " --force";
  }
}

// Every key a template writes is a key of the table, also inside sections that accept
// undeclared keys (metadata, v2_features, ...), where the reader would not notice a typo.
// Free-form values (kAny, kAnyMapping) are not walked into.
void CollectKeyPaths(const YAML::Node& node, const std::string& path,
                     std::vector<std::string>& out) {
  if (!path.empty()) {
    const KeySpec* spec = ResolveKeySpec(path);
    if (spec != nullptr && (spec->type == KeyType::kAny || spec->type == KeyType::kAnyMapping)) {
      return;
    }
  }
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string child = path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar();
      out.push_back(child);
      CollectKeyPaths(kv.second, child, out);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      CollectKeyPaths(node[i], path + "[" + std::to_string(i) + "]", out);
    }
  }
}

TEST(ConfigTool, TemplatesWriteOnlyTableKeys) {
  for (AnalysisMode mode : {AnalysisMode::kStatic, AnalysisMode::kLaminarFlow}) {
    std::vector<std::string> paths;
    CollectKeyPaths(YAML::Load(ConfigTemplate(mode)), "", paths);
    EXPECT_GT(paths.size(), 100u);
    for (const auto& path : paths) {
      EXPECT_NE(ResolveKeySpec(path), nullptr)
          << ToString(mode) << " template writes unknown key " << path;
    }
  }
}

}  // namespace
}  // namespace homodyne::config
