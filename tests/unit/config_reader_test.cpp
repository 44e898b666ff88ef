// Reader behaviour on the test templates and on each validation rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "config/choices.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "test_data.h"

namespace homodyne::config {
namespace {

using ::testing::HasSubstr;

const std::string kConfigDir = testing::TestDataPath("configs/");

// A minimal valid config; tests append or replace sections.
const std::string kData =
    "experimental_data:\n"
    "  data_folder_path: ./data/\n"
    "  data_file_name: run.hdf\n";

Config Read(const std::string& yaml, const ReadOptions& options = {}) {
  return ReadConfigString(yaml, "test.yaml", options);
}

// The message of the bad-input error raised for `yaml` (fails the test if none).
// Unknown keys are errors here (--strict); ConfigReader.UnknownKeysAreIgnoredWithAList tests
// the lenient default.
std::string ErrorOf(const std::string& yaml, ReadOptions options = {}) {
  options.strict = true;
  try {
    Read(yaml, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    EXPECT_EQ(ExitCodeOf(e), ExitCode::kBadInput);
    return e.what();
  }
  ADD_FAILURE() << "config was accepted:\n" << yaml;
  return {};
}

TEST(ConfigReader, StaticTemplateValues) {
  const Config c = ReadConfigFile(kConfigDir + "static.yaml");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kStatic);
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.001);
  EXPECT_EQ(c.analyzer.start_frame, 1);
  EXPECT_EQ(c.analyzer.end_frame, 2000);
  EXPECT_DOUBLE_EQ(c.analyzer.wavevector_q, 0.0054);
  EXPECT_DOUBLE_EQ(c.analyzer.stator_rotor_gap, 2.0e6);
  EXPECT_EQ(c.experimental_data.DataFile(), "./data/sample/sample_data.hdf");
  ASSERT_EQ(c.phi_filtering.target_ranges.size(), 2u);
  EXPECT_TRUE(c.phi_filtering.enabled);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[1].min_angle, 170.0);
  EXPECT_DOUBLE_EQ(c.phi_filtering.target_ranges[1].max_angle, -170.0);
  ASSERT_EQ(c.parameters.size(), 3u);
  EXPECT_EQ(c.parameters[0].name, "D0");
  EXPECT_DOUBLE_EQ(c.parameters[0].initial, 50050.0);  // midpoint of [1e2, 1e5]
  EXPECT_DOUBLE_EQ(c.parameters[1].initial, 0.0);
  EXPECT_EQ(c.optimization.nlsq.max_iterations, 100);
  EXPECT_FALSE(c.optimization.nlsq.anti_degeneracy.enable);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_warmup, 1000);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_samples, 3000);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 4);
  EXPECT_DOUBLE_EQ(c.optimization.cmc.validation.max_parameter_cv, 1.5);
  EXPECT_FALSE(c.optimization.cmc.reparameterization.enable_log_gamma);
  ASSERT_EQ(c.parameter_space.priors.count("contrast"), 1u);
  EXPECT_DOUBLE_EQ(*c.parameter_space.priors.at("contrast").mu, 0.06);
  EXPECT_DOUBLE_EQ(*c.parameter_space.bounds[1].prior_mu, -1.2);
}

TEST(ConfigReader, LaminarTemplateValues) {
  const Config c = ReadConfigFile(kConfigDir + "laminar_flow.yaml");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  ASSERT_EQ(c.parameters.size(), 7u);
  const std::vector<std::string> names = {
      "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(c.parameters[i].name, names[i]);
  EXPECT_DOUBLE_EQ(c.FindParameter("gamma_dot_t0")->initial, 0.5 * (1e-6 + 0.5));
  EXPECT_DOUBLE_EQ(c.FindParameter("phi0")->min, -10.0);
  EXPECT_TRUE(c.optimization.nlsq.anti_degeneracy.section_present);
  EXPECT_EQ(homodyne::config::ChoiceName(c.optimization.nlsq.anti_degeneracy.per_angle_mode),
            "auto");
  EXPECT_EQ(homodyne::config::ChoiceName(c.optimization.cmc.sharding.strategy), "stratified");
  EXPECT_FALSE(c.optimization.cmc.sharding.num_shards.has_value());  // auto
  // optimization.mcmc (500/1500/2) overrides per_shard_mcmc (500/1500/4).
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 2);
  EXPECT_DOUBLE_EQ(c.optimization.cmc.combination.min_success_rate, 0.80);
  EXPECT_DOUBLE_EQ(c.optimization.cmc.validation.max_per_shard_rhat, 1.2);
  // Defaults for keys the file leaves out.
  EXPECT_DOUBLE_EQ(c.optimization.nlsq.xtol, 1e-8);
  EXPECT_EQ(c.optimization.cmc.seed, 42);
  EXPECT_EQ(c.experimental_data.cache_file_path, "");
  EXPECT_TRUE(c.experimental_data.cache_compression);
}

TEST(ConfigReader, MasterTemplateValues) {
  const Config c = ReadConfigFile(kConfigDir + "master.yaml");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);  // "Laminar_Flow"
  EXPECT_EQ(c.analysis_mode_name, "laminar_flow");
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.002);
  EXPECT_EQ(c.analyzer.start_frame, 10);
  EXPECT_EQ(c.analyzer.end_frame, 1010);
  EXPECT_DOUBLE_EQ(c.analyzer.stator_rotor_gap, 1.5e6);  // analyzer geometry wins
  EXPECT_DOUBLE_EQ(c.q_tolerance_fraction, 0.05);
  EXPECT_FALSE(c.experimental_data.cache_compression);
  EXPECT_EQ(c.experimental_data.cache_file_path, "/scratch/cache/");
  EXPECT_EQ(c.cache_strategy, CacheStrategy::kNone);
  // Aliases canonicalised in names, bounds, fixed parameters and x_scale_map.
  EXPECT_EQ(c.initial_parameters.parameter_names[3], "gamma_dot_t0");
  EXPECT_EQ(c.initial_parameters.parameter_names[5], "gamma_dot_t_offset");
  EXPECT_EQ(c.initial_parameters.parameter_names[6], "phi0");
  EXPECT_DOUBLE_EQ(c.FindParameter("gamma_dot_t0")->initial, 0.002);
  EXPECT_DOUBLE_EQ(c.FindParameter("gamma_dot_t0")->max, 0.01);
  EXPECT_DOUBLE_EQ(c.FindParameter("phi0")->min, -20.0);
  EXPECT_DOUBLE_EQ(c.FindParameter("phi0")->initial, 4.0);
  EXPECT_EQ(c.initial_parameters.fixed_parameters.count("gamma_dot_t_offset"), 1u);
  EXPECT_EQ(c.optimization.nlsq.x_scale_map.count("gamma_dot_t0"), 1u);
  ASSERT_TRUE(c.initial_parameters.active_parameters.has_value());
  EXPECT_EQ(c.initial_parameters.active_parameters->size(), 6u);
  ASSERT_TRUE(c.initial_parameters.contrast.has_value());
  EXPECT_DOUBLE_EQ((*c.initial_parameters.contrast)[1], 0.22);
  // Bounds not in the file fall back to the built-in defaults.
  EXPECT_DOUBLE_EQ(c.FindParameter("D_offset")->min, -1e5);
  EXPECT_FALSE(c.FindParameter("D_offset")->bounds_from_config);
  EXPECT_DOUBLE_EQ(c.FindParameter("beta")->max, 2.0);
  EXPECT_DOUBLE_EQ(c.contrast.min, 0.05);
  EXPECT_DOUBLE_EQ(c.offset.max, 1.1);
  EXPECT_EQ(c.parameter_space.priors.count("offset"), 1u);  // from "offset_0"
  EXPECT_EQ(c.parameter_space.bounds[0].prior_type, PriorType::kLogNormal);
  // Optimizer sections.
  const auto& n = c.optimization.nlsq;
  EXPECT_EQ(c.optimization.method, FitMethod::kBoth);
  EXPECT_EQ(n.max_iterations, 250);
  EXPECT_DOUBLE_EQ(n.tolerance, 1e-9);
  EXPECT_DOUBLE_EQ(n.gtol, 3e-9);
  EXPECT_DOUBLE_EQ(n.memory_fraction, 0.6);
  EXPECT_DOUBLE_EQ(*n.memory_threshold_gb, 32.0);
  EXPECT_EQ(homodyne::config::ChoiceName(n.anti_degeneracy.per_angle_mode), "fourier");
  EXPECT_EQ(n.anti_degeneracy.fourier_order, 3);
  EXPECT_EQ(n.anti_degeneracy.constant_scaling_threshold, 4);
  EXPECT_TRUE(n.multi_start.enable);
  EXPECT_EQ(n.multi_start.n_starts, 16);
  EXPECT_EQ(n.multi_start.seed, 7);
  EXPECT_DOUBLE_EQ(n.multi_start.screen_keep_fraction, 0.25);
  const auto& s = c.optimization.streaming;
  EXPECT_TRUE(s.enable_checkpoints);
  EXPECT_EQ(s.checkpoint_dir, "./ckpt");
  EXPECT_EQ(s.checkpoint_frequency, 5);
  EXPECT_EQ(*s.batch_size, 50000);
  const auto& cmc = c.optimization.cmc;
  EXPECT_EQ(cmc.enable, AutoSwitch::kTrue);
  EXPECT_EQ(homodyne::config::ChoiceName(cmc.per_angle_mode), "constant_averaged");
  EXPECT_EQ(cmc.seed, 1234);
  EXPECT_FALSE(cmc.prior_tempering);
  EXPECT_EQ(homodyne::config::ChoiceName(cmc.sharding.strategy), "contiguous");
  EXPECT_EQ(*cmc.sharding.num_shards, 8);
  EXPECT_EQ(*cmc.sharding.max_points_per_shard, 250000);
  EXPECT_EQ(cmc.backend_config.checkpoint_dir, "./checkpoints/cmc_run");
  EXPECT_FALSE(cmc.backend_config.resume_from_checkpoint);
  EXPECT_EQ(cmc.per_shard_mcmc.num_warmup, 1000);  // mcmc override of 400
  EXPECT_EQ(cmc.per_shard_mcmc.max_tree_depth, 8);
  EXPECT_DOUBLE_EQ(cmc.validation.nlsq_prior_width_factor, 3.0);
  EXPECT_TRUE(cmc.validation.strict_mode);
  EXPECT_FALSE(cmc.reparameterization.enable_d_total);
  EXPECT_EQ(homodyne::config::ChoiceName(cmc.combination.method), "weighted_gaussian");
  EXPECT_EQ(c.logging.level, homodyne::LogLevel::kDebug);
  EXPECT_EQ(c.logging.modules.at("homodyne.core"), "WARNING");
  EXPECT_EQ(c.logging.file_name, "master.log");
  EXPECT_EQ(c.output_directory, "./master_results");
  // Generic lookups reach keys without typed fields.
  EXPECT_EQ(ConfigInteger(c, "optimization.nlsq.hybrid_streaming.chunk_size"), 10000);
  EXPECT_EQ(ConfigString(c, "plotting.fit_surface"), "solver");
  EXPECT_DOUBLE_EQ(ConfigNumber(c, "optimization.recovery.lambda_growth"), 2.0);
  EXPECT_FALSE(ConfigHasValue(c, "optimization.nlsq.cmaes.popsize"));
  // Undeclared keys of open sections are accepted and listed.
  EXPECT_THAT(c.accepted_keys_present, ::testing::Contains("metadata.sample_name"));
  EXPECT_THAT(c.accepted_keys_present, ::testing::Contains("noise_estimation.extra_option"));
}

TEST(ConfigReader, MisspeltKeySuggestsNearestWithLine) {
  const std::string msg = ErrorOf(kData +
                                  "analyzer_parameters:\n"
                                  "  dtt: 0.1\n");
  EXPECT_THAT(msg, HasSubstr("test.yaml"));
  EXPECT_THAT(msg, HasSubstr("analyzer_parameters.dtt: unknown key (line 5); did you mean "
                             "analyzer_parameters.dt?"));
  const std::string deep = ErrorOf(kData +
                                   "optimization:\n"
                                   "  nlsq:\n"
                                   "    anti_degeneracy:\n"
                                   "      per_angle_mod: auto\n");
  EXPECT_THAT(deep, HasSubstr("optimization.nlsq.anti_degeneracy.per_angle_mod: unknown key "
                              "(line 7); did you mean "
                              "optimization.nlsq.anti_degeneracy.per_angle_mode?"));
  // A key in the wrong section points to where it belongs.
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  max_iterations: 5\n"),
              HasSubstr("did you mean optimization.nlsq.max_iterations?"));
  // Inside a list element.
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: 1, maks: 2}\n"),
              HasSubstr("parameter_space.bounds[0].maks: unknown key (line 6); did you mean "
                        "parameter_space.bounds[0].max?"));
}

// homodyne's and xpcsjax's reading: an unknown key is ignored with its subtree and listed
// (with the nearest valid key where one is close) for a warning; every other problem is
// still an error. A suggestion stays inside the key's own top-level section.
TEST(ConfigReader, UnknownKeysAreIgnoredWithAList) {
  const Config c = Read(kData +
                        "analyzer_parameters:\n"
                        "  dtt: 0.1\n"
                        "optimization:\n"
                        "  nlsq:\n"
                        "    shear_transforms: {enable: true}\n"
                        "  cmc:\n"
                        "    diagonal_correction: true\n"  // homodyne's of 2025: accepted
                        "  mcmc:\n"
                        "    enabled: true\n"
                        "multi_start:\n"
                        "  subsample_size: 1000\n");
  ASSERT_EQ(c.ignored_keys.size(), 4u) << ::testing::PrintToString(c.ignored_keys);
  EXPECT_THAT(c.ignored_keys[0], HasSubstr("analyzer_parameters.dtt (unknown key (line 5); did "
                                           "you mean analyzer_parameters.dt?)"));
  EXPECT_THAT(c.ignored_keys[1], HasSubstr("optimization.nlsq.shear_transforms (unknown key"));
  EXPECT_THAT(c.ignored_keys[2], HasSubstr("optimization.mcmc.enabled (unknown key"));
  EXPECT_THAT(c.ignored_keys[2], ::testing::Not(HasSubstr("diagnostics")));
  EXPECT_THAT(c.ignored_keys[3], HasSubstr("multi_start (unknown key"));
  EXPECT_DOUBLE_EQ(Read(kData).analyzer.dt, c.analyzer.dt);  // dtt changed nothing
  // Wrong types stay errors in a lenient read.
  try {
    Read(kData + "analyzer_parameters:\n  dt: fast\n  dtt: 1\n");
    ADD_FAILURE() << "a wrong type was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("analyzer_parameters.dt: expected a number"));
  }
  // Strict: the same unknown keys are refused, every one named.
  const std::string strict = ErrorOf(kData + "analyzer_parameters:\n  dtt: 0.1\n");
  EXPECT_THAT(strict, HasSubstr("analyzer_parameters.dtt: unknown key"));
}

// ~ and environment variables in path keys, as xpcsjax expands them; unset variables and
// ~user stay as written. xpcsjax's file_path names the data file by itself.
TEST(ConfigReader, PathsExpandHomeAndVariables) {
  ASSERT_EQ(setenv("HOMODYNE_TEST_ROOT", "/scratch/beam", 1), 0);
  ASSERT_EQ(setenv("HOME", "/home/user", 1), 0);
  EXPECT_EQ(ExpandUserAndVariables("~/data"), "/home/user/data");
  EXPECT_EQ(ExpandUserAndVariables("~"), "/home/user");
  EXPECT_EQ(ExpandUserAndVariables("~other/data"), "~other/data");
  EXPECT_EQ(ExpandUserAndVariables("${HOMODYNE_TEST_ROOT}/run_$HOMODYNE_TEST_ROOT"),
            "/scratch/beam/run_/scratch/beam");
  EXPECT_EQ(ExpandUserAndVariables("$HOMODYNE_TEST_UNSET/x ${HOMODYNE_TEST_UNSET} ${open"),
            "$HOMODYNE_TEST_UNSET/x ${HOMODYNE_TEST_UNSET} ${open");
  EXPECT_EQ(ExpandUserAndVariables("cost$"), "cost$");
  const Config c = Read(
      "experimental_data:\n  data_folder_path: ${HOMODYNE_TEST_ROOT}/c2\n"
      "  data_file_name: run.hdf\noptimization:\n  streaming:\n    checkpoint_dir: ~/ck\n");
  EXPECT_EQ(c.experimental_data.DataFile(), "/scratch/beam/c2/run.hdf");
  EXPECT_EQ(c.optimization.streaming.checkpoint_dir, "/home/user/ck");
  const Config modern = Read("experimental_data:\n  file_path: ${HOMODYNE_TEST_ROOT}/one.h5\n");
  EXPECT_EQ(modern.experimental_data.DataFile(), "/scratch/beam/one.h5");
}

TEST(ConfigReader, WrongTypesNameKeyLineAndExpectedType) {
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  dt: fast\n"),
              HasSubstr("analyzer_parameters.dt: expected a number, found 'fast' (line 5)"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  start_frame: 1.5\n"),
              HasSubstr("analyzer_parameters.start_frame: expected an integer"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  dt: \"0.1\"\n"),
              HasSubstr("expected a number, found the string \"0.1\""));
  EXPECT_THAT(ErrorOf(kData + "phi_filtering:\n  enabled: maybe\n"),
              HasSubstr("phi_filtering.enabled: expected true/false"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters: 3\n"),
              HasSubstr("analyzer_parameters: expected a mapping"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  values: [1, x, 3]\n"),
              HasSubstr("initial_parameters.values[1]: expected a number, found 'x'"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  cmc:\n    sharding:\n      num_shards: many\n"),
              HasSubstr("expected an integer or \"auto\""));
  EXPECT_THAT(ErrorOf(kData + "phi_filtering:\n  target_ranges: [1, 2]\n"),
              HasSubstr("phi_filtering.target_ranges[0]: expected a mapping"));
}

// YAML's .nan and .inf are not numbers here: a NaN initial value, fixed value or contrast, or
// an infinite bound, would otherwise reach the solver (which failed on it, on one rank).
// Errors of the typed access (after the schema check) name the file too.
TEST(ConfigReader, IntegerBeyondItsRangeNamesFileKeyAndLine) {
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  end_frame: 99999999999\n"),
              HasSubstr("test.yaml: analyzer_parameters.end_frame: value 99999999999 is out of "
                        "the integer range (line 5)"));
}

TEST(ConfigReader, NonFiniteNumbersAreRejectedWithTheirKey) {
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  dt: .inf\n"),
              HasSubstr("analyzer_parameters.dt: expected a number, found '.inf' (line 5)"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  values: [1, .nan, 3]\n"),
              HasSubstr("initial_parameters.values[1]: expected a number, found '.nan'"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  fixed_parameters:\n    D0: .NaN\n"),
              HasSubstr("initial_parameters.fixed_parameters.D0"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: 1, max: .inf}\n"),
              HasSubstr("parameter_space.bounds[0].max"));
  EXPECT_THAT(
      ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: -1e999, max: 2}\n"),
      HasSubstr("parameter_space.bounds[0].min"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  per_angle_scaling:\n    contrast: [.nan]\n"),
              HasSubstr("initial_parameters.per_angle_scaling.contrast[0]: expected a number"));
}

TEST(ConfigReader, InvalidValuesNameTheRule) {
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  dt: 0\n"),
              HasSubstr("analyzer_parameters.dt: must be > 0, found '0'"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  dt: -0.001\n"),
              HasSubstr("analyzer_parameters.dt: must be > 0"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  start_frame: 0\n"),
              HasSubstr("analyzer_parameters.start_frame: must be >= 1"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  start_frame: 100\n  end_frame: 50\n"),
              HasSubstr("analyzer_parameters.end_frame: must be -1 (last frame) or >= "
                        "start_frame (100), found 50 (line 6)"));
  EXPECT_THAT(ErrorOf(kData + "analyzer_parameters:\n  end_frame: -2\n"),
              HasSubstr("analyzer_parameters.end_frame: must be -1"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: 10, max: 10}\n"),
              HasSubstr("parameter_space.bounds[0]: min (10) must be < max (10) for 'D0'"));
  EXPECT_THAT(ErrorOf(kData + "analysis_mode: turbulent\n"),
              HasSubstr("analysis_mode: must be one of: static, static_isotropic, "
                        "static_anisotropic, laminar_flow"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  nlsq:\n    anti_degeneracy:\n"
                              "      per_angle_mode: averaged\n"),
              HasSubstr("optimization.nlsq.anti_degeneracy.per_angle_mode: must be one of: auto, "
                        "constant, individual, fourier"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  cmc:\n    per_angle_mode: fourier\n"),
              HasSubstr("optimization.cmc.per_angle_mode: must be one of"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  nlsq:\n    multi_start:\n      n_starts: -3\n"),
              HasSubstr("optimization.nlsq.multi_start.n_starts: must be >= 1"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  cmc:\n    per_shard_mcmc:\n      num_warmup: -1\n"),
              HasSubstr("num_warmup: must be >= 0"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
                              "  values: [1, 2]\n"),
              HasSubstr("initial_parameters.values: has 2 entries but parameter_names has 3"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  parameter_names: [D0, alpha, D_ofset]\n"),
              HasSubstr("initial_parameters.parameter_names[2]: unknown parameter name 'D_ofset'"));
  EXPECT_THAT(ErrorOf(kData + "initial_parameters:\n  parameter_names: [D0, beta]\n"),
              HasSubstr("unknown parameter name 'beta' (line 5) for analysis_mode static"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: gamma, min: 0, max: 1}\n"),
              HasSubstr("parameter_space.bounds[0].name: unknown parameter name 'gamma'"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: 1, max: 9}\n"
                              "    - {name: D0, min: 2, max: 9}\n"),
              HasSubstr("parameter_space.bounds[1]: second bounds entry for 'D0'"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n"
                              "    - {name: contrast_0, min: 0, max: 1}\n"
                              "    - {name: contrast_1, min: 0, max: 0.5}\n"),
              HasSubstr("second bounds entry for 'contrast'"));
  EXPECT_NO_THROW(Read(kData + "parameter_space:\n  bounds:\n"
                               "    - {name: offset_0, min: 0.8, max: 1.2}\n"
                               "    - {name: offset_1, min: 0.8, max: 1.2}\n"));
  EXPECT_THAT(ErrorOf(kData + "parameter_space:\n  bounds:\n    - {name: D0, min: 0}\n"),
              HasSubstr("parameter_space.bounds[0].max: required key is missing"));
  EXPECT_THAT(
      ErrorOf(kData + "optimization:\n  cmc:\n    per_shard_mcmc:\n      target_accept_prob: 1\n"),
      HasSubstr("optimization.cmc.per_shard_mcmc.target_accept_prob: must be in (0, 1)"));
}

TEST(ConfigReader, DataFileRequiredAndOptionallyChecked) {
  EXPECT_THAT(ErrorOf("analysis_mode: static\n"),
              HasSubstr("experimental_data.data_folder_path: is required for a fit"));
  EXPECT_THAT(ErrorOf("experimental_data:\n  data_folder_path: ./d/\n"),
              HasSubstr("experimental_data.data_file_name: is required for a fit"));
  ReadOptions lenient;
  lenient.require_data_file = false;
  EXPECT_NO_THROW(Read("analysis_mode: static\n", lenient));
  ReadOptions check;
  check.check_data_file_exists = true;
  EXPECT_THAT(ErrorOf(kData, check), HasSubstr("data file ./data/run.hdf does not exist"));
  const std::string real_dir =
      std::filesystem::weakly_canonical(testing::TestDataPath("real")).string();
  EXPECT_NO_THROW(Read("experimental_data:\n  data_folder_path: " + real_dir +
                           "\n  data_file_name: bnl_twotime_350.h5\n",
                       check));
  EXPECT_THAT(ErrorOf("experimental_data:\n  data_folder_path: ../secret/\n"
                      "  data_file_name: a.hdf\n"),
              HasSubstr("must not contain '..'"));
}

TEST(ConfigReader, SeveralProblemsReportedTogether) {
  const std::string msg = ErrorOf(kData + "analyzer_parameters:\n  dt: 0\n  start_frame: 0\n");
  EXPECT_THAT(msg, HasSubstr("2 problems"));
  EXPECT_THAT(msg, HasSubstr("analyzer_parameters.dt"));
  EXPECT_THAT(msg, HasSubstr("analyzer_parameters.start_frame"));
}

TEST(ConfigReader, YamlSyntaxErrorReportsLineAndColumn) {
  const std::string msg = ErrorOf("analysis_mode: static\nanalyzer_parameters:\n  dt: [0.1\n");
  EXPECT_THAT(msg, HasSubstr("test.yaml: YAML syntax error at line"));
  EXPECT_THAT(msg, HasSubstr("column"));
  EXPECT_THAT(ErrorOf("a: b\n c: d\n"), HasSubstr("line 2, column"));
}

TEST(ConfigReader, FlatLegacyLayoutIsConverted) {
  const Config c = Read(
      "data_file: /data/set1/run5.hdf\ndt: 0.05\nstart_frame: 3\n"
      "output_directory: ./legacy_out\nanalysis_mode: laminar_flow\n");
  EXPECT_TRUE(c.legacy_flat_layout);
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.05);
  EXPECT_EQ(c.analyzer.start_frame, 3);
  EXPECT_EQ(c.analyzer.end_frame, -1);
  EXPECT_EQ(c.experimental_data.data_folder_path, "/data/set1/");
  EXPECT_EQ(c.experimental_data.data_file_name, "run5.hdf");
  EXPECT_EQ(c.experimental_data.file_path, "/data/set1/run5.hdf");
  EXPECT_EQ(c.output_directory, "./legacy_out");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  // Flat defaults: dt 0.1, start 1, end -1.
  const Config d = Read("data_file: run.hdf\n");
  EXPECT_DOUBLE_EQ(d.analyzer.dt, 0.1);
  EXPECT_EQ(d.analyzer.start_frame, 1);
  EXPECT_EQ(d.experimental_data.data_folder_path, "./");
  // Flat values are validated in their new place.
  EXPECT_THAT(ErrorOf("data_file: run.hdf\ndt: -1\n"),
              HasSubstr("analyzer_parameters.dt: must be > 0"));
  // Mixed with the nested layout, a flat key is unknown.
  EXPECT_THAT(ErrorOf(kData + "dt: 0.1\n"),
              HasSubstr("dt: unknown key (line 4); did you mean analyzer_parameters.dt?"));
}

TEST(ConfigReader, FallbacksForDtAndGap) {
  Config c = Read(kData + "analysis_mode: laminar_flow\n");
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 1.0);
  EXPECT_EQ(c.analyzer.dt_source, "default");
  EXPECT_DOUBLE_EQ(c.analyzer.stator_rotor_gap, 2.0e6);
  EXPECT_EQ(c.analyzer.end_frame, -1);
  c = Read(kData + "  dt: 0.25\n  sample_detector_distance: 7000\n");
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.25);
  EXPECT_EQ(c.analyzer.dt_source, "experimental_data.dt");
  EXPECT_DOUBLE_EQ(c.analyzer.stator_rotor_gap, 7000.0);
  c = Read(kData + "  geometry:\n    stator_rotor_gap: 300\n  sample_detector_distance: 7000\n");
  EXPECT_DOUBLE_EQ(c.analyzer.stator_rotor_gap, 300.0);
}

TEST(ConfigReader, BoundsFallbackAndMidpointInitialValues) {
  const Config c = Read(kData +
                        "analysis_mode: laminar_flow\n"
                        "parameter_space:\n  bounds:\n"
                        "    - {name: gamma_dot_offset, min: -0.5, max: 1.5}\n"
                        "    - {name: contrast_0, min: 0.1, max: 0.3}\n");
  // §1.8 defaults and midpoints.
  const struct {
    const char* name;
    double min, max;
  } expected[] = {{"D0", 1e2, 1e5},        {"alpha", -2, 2},
                  {"D_offset", -1e5, 1e5}, {"gamma_dot_t0", 1e-6, 0.5},
                  {"beta", -2, 2},         {"gamma_dot_t_offset", -0.5, 1.5},
                  {"phi0", -10, 10}};
  ASSERT_EQ(c.parameters.size(), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(c.parameters[i].name, expected[i].name);
    EXPECT_DOUBLE_EQ(c.parameters[i].min, expected[i].min) << expected[i].name;
    EXPECT_DOUBLE_EQ(c.parameters[i].max, expected[i].max) << expected[i].name;
    EXPECT_DOUBLE_EQ(c.parameters[i].initial, 0.5 * (expected[i].min + expected[i].max));
    EXPECT_FALSE(c.parameters[i].initial_from_config);
  }
  EXPECT_TRUE(c.FindParameter("gamma_dot_t_offset")->bounds_from_config);
  EXPECT_DOUBLE_EQ(c.contrast.min, 0.1);
  EXPECT_DOUBLE_EQ(c.offset.min, 0.5);
  EXPECT_DOUBLE_EQ(c.offset.max, 1.5);
  // values: null → midpoints as well.
  const Config n = Read(kData + "initial_parameters:\n  values: null\n");
  EXPECT_DOUBLE_EQ(n.FindParameter("D0")->initial, 50050.0);
  // Partial names: listed ones from the file, the others at the midpoint.
  const Config p = Read(kData +
                        "initial_parameters:\n  parameter_names: [alpha]\n"
                        "  values: [-1.5]\n");
  EXPECT_DOUBLE_EQ(p.FindParameter("alpha")->initial, -1.5);
  EXPECT_DOUBLE_EQ(p.FindParameter("D_offset")->initial, 0.0);
}

TEST(ConfigReader, McmcOverridesPerShardOnlyWhenSet) {
  const std::string cmc =
      "optimization:\n  cmc:\n    per_shard_mcmc: {num_warmup: 300, num_samples: 700, "
      "num_chains: 3}\n";
  Config c = Read(kData + cmc);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_warmup, 300);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_samples, 700);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 3);
  c = Read(kData + cmc + "  mcmc:\n    num_samples: 2222\n");
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_warmup, 300);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_samples, 2222);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 3);
  c = Read(kData);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_warmup, 500);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_samples, 1500);
  EXPECT_EQ(c.optimization.cmc.per_shard_mcmc.num_chains, 4);
}

TEST(ConfigReader, CodeDefaultsWhenSectionsAreAbsent) {
  const Config c = Read(kData);
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kStatic);  // code default static_isotropic
  EXPECT_EQ(c.optimization.nlsq.max_iterations, 1000);
  EXPECT_FALSE(c.optimization.nlsq.anti_degeneracy.section_present);
  EXPECT_FALSE(c.phi_filtering.enabled);
  EXPECT_DOUBLE_EQ(c.q_tolerance_fraction, 0.1);
  EXPECT_EQ(c.experimental_data.cache_filename_template,
            "cached_c2_frames_${start_frame}_${end_frame}.npz");
  EXPECT_EQ(c.optimization.cmc.enable, AutoSwitch::kAuto);
  EXPECT_EQ(c.output_directory, "./homodyne_results");
}

TEST(ConfigReader, JsonConfigsAreAccepted) {
  const Config c = Read(R"({"analysis_mode": "laminar_flow",
    "analyzer_parameters": {"dt": 0.01, "start_frame": 2, "end_frame": 20},
    "experimental_data": {"data_folder_path": "./d/", "data_file_name": "x.hdf"},
    "initial_parameters": {"parameter_names": ["D0", "phi_0"], "values": [2000, 3.5]},
    "optimization": {"cmc": {"sharding": {"num_shards": "auto"}}}})");
  EXPECT_EQ(c.analysis_mode, AnalysisMode::kLaminarFlow);
  EXPECT_DOUBLE_EQ(c.analyzer.dt, 0.01);
  EXPECT_EQ(c.analyzer.end_frame, 20);
  EXPECT_DOUBLE_EQ(c.FindParameter("phi0")->initial, 3.5);
  EXPECT_THAT(ErrorOf(R"({"analyzer_parameters": {"dt": "0.01"}})"),
              HasSubstr("analyzer_parameters.dt: expected a number, found the string \"0.01\""));
}

TEST(ConfigReader, EmptyOrNonMappingFilesAreRejected) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("empty"));
  EXPECT_THAT(ErrorOf("- a\n- b\n"), HasSubstr("top level must be a mapping"));
  EXPECT_THAT(ErrorOf(kData + "analysis_mode: static\nanalysis_mode: laminar_flow\n"),
              HasSubstr("analysis_mode: duplicate key (line 5)"));
  try {
    ReadConfigFile("/nonexistent/config.yaml");
    ADD_FAILURE() << "missing file accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/config.yaml"));
  }
}

// Each parameter's CMC prior is resolved with the parameter: the table's TruncatedNormal on
// its bounds (midpoint, width / 4), a bounds entry's type and prior_mu/prior_sigma, then
// parameter_space.priors, whose names are read ignoring case.
TEST(ConfigReader, PriorsAreResolvedWithTheParameters) {
  const Config c = Read(kData +
                        "analysis_mode: static\n"
                        "parameter_space:\n"
                        "  bounds:\n"
                        "    - {name: D0, min: 100, max: 1000, type: lognormal, prior_mu: 5.0}\n"
                        "    - {name: alpha, min: -1.0, max: 1.0}\n"
                        "  priors:\n"
                        "    contrast: {dist_type: uniform, sigma: 0.3}\n"
                        "    alpha: {dist_type: HalfNormal, mu: 0.25}\n");
  const ParameterPrior& d0 = c.FindParameter("D0")->prior;
  EXPECT_EQ(d0.type, PriorType::kLogNormal);
  EXPECT_EQ(d0.mu, 5.0);
  EXPECT_EQ(d0.sigma, 0.25 * (1000.0 - 100.0));
  const ParameterPrior& alpha = c.FindParameter("alpha")->prior;
  EXPECT_EQ(alpha.type, PriorType::kHalfNormal);
  EXPECT_EQ(alpha.mu, 0.25);
  EXPECT_EQ(alpha.sigma, 0.5);
  const ParameterPrior& d_offset = c.FindParameter("D_offset")->prior;  // built-in bounds
  EXPECT_EQ(d_offset.type, PriorType::kTruncatedNormal);
  EXPECT_EQ(d_offset.mu,
            0.5 * (c.FindParameter("D_offset")->min + c.FindParameter("D_offset")->max));
  EXPECT_EQ(d_offset.sigma,
            0.25 * (c.FindParameter("D_offset")->max - c.FindParameter("D_offset")->min));
  EXPECT_EQ(c.contrast.prior.type, PriorType::kUniform);
  EXPECT_EQ(c.contrast.prior.mu, 0.5 * (c.contrast.min + c.contrast.max));
  EXPECT_EQ(c.contrast.prior.sigma, 0.3);
  EXPECT_EQ(c.offset.prior.type, PriorType::kTruncatedNormal);
  EXPECT_EQ(c.offset.prior.sigma, 0.25 * (c.offset.max - c.offset.min));
}

// two_component centres the default prior on the registry's start when the bounds hold it.
TEST(ConfigReader, TwoComponentPriorsCentreOnTheRegistryStart) {
  const Config c = Read(kData +
                        "analysis_mode: two_component\n"
                        "parameter_space:\n"
                        "  bounds:\n"
                        "    - {name: D0_sample, min: 2.0e4, max: 1.0e5}\n");
  const EffectiveParameter* ref = c.FindParameter("D0_ref");
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->prior.mu, DefaultParameterBounds("D0_ref")->nlsq_start);
  EXPECT_NE(ref->prior.mu, 0.5 * (ref->min + ref->max));
  EXPECT_EQ(ref->prior.sigma, 0.25 * (ref->max - ref->min));
  // The registry's 1e4 lies below these bounds: the midpoint.
  EXPECT_EQ(c.FindParameter("D0_sample")->prior.mu, 6.0e4);
  EXPECT_EQ(c.contrast.prior.mu, DefaultParameterBounds("contrast")->nlsq_start);
}

TEST(ConfigReader, PriorTypeOutsideTheFamiliesNamesKeyAndChoices) {
  const std::string bounds = ErrorOf(kData +
                                     "parameter_space:\n  bounds:\n"
                                     "    - {name: D0, min: 1, max: 2, type: Cauchy}\n");
  EXPECT_THAT(bounds, HasSubstr("parameter_space.bounds"));
  EXPECT_THAT(bounds, HasSubstr("Cauchy"));
  EXPECT_THAT(bounds, HasSubstr("TruncatedNormal, Normal, Uniform, LogNormal, HalfNormal"));
  const std::string priors = ErrorOf(kData +
                                     "parameter_space:\n  priors:\n"
                                     "    D0: {dist_type: StudentT}\n");
  EXPECT_THAT(priors, HasSubstr("parameter_space.priors.D0.dist_type"));
  EXPECT_THAT(priors, HasSubstr("StudentT"));
}

// The true/false/auto keys and the remaining string choices are enums after the read.
TEST(ConfigReader, SwitchAndChoiceKeysAreReadIntoEnums) {
  const Config c = Read(kData +
                        "optimization:\n"
                        "  cmc:\n"
                        "    enable: false\n"
                        "    validation:\n"
                        "      use_nlsq_informed_priors: true\n"
                        "  nlsq:\n"
                        "    cmaes:\n"
                        "      preset: cmaes-global\n"
                        "      restart_strategy: none\n");
  EXPECT_EQ(c.optimization.cmc.enable, AutoSwitch::kFalse);
  EXPECT_EQ(c.optimization.cmc.validation.use_nlsq_informed_priors, AutoSwitch::kTrue);
  EXPECT_EQ(c.optimization.nlsq.cmaes.preset, CmaesPreset::kGlobal);
  EXPECT_EQ(c.optimization.nlsq.cmaes.restart_strategy, CmaesRestart::kNone);
  EXPECT_EQ(c.cache_strategy, CacheStrategy::kIntelligent);
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  nlsq:\n    cmaes:\n      preset: cmaes-huge\n"),
              HasSubstr("optimization.nlsq.cmaes.preset"));
  EXPECT_THAT(ErrorOf(kData + "optimization:\n  cmc:\n    enable: sometimes\n"),
              HasSubstr("optimization.cmc.enable"));
}

}  // namespace
}  // namespace homodyne::config
