// The option structs of the solver layers restate the key table's defaults in their member
// initialisers (tests and the API build them directly). Each struct built from the default
// config must equal the default-constructed struct, field by field, so that a default changed
// on one side only fails here instead of making a test's fit differ from a user's.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/choices.h"
#include "config/config_reader.h"
#include "config/key_table.h"
#include "global/anti_degeneracy.h"
#include "global/fit_pipeline.h"
#include "global/global_stage.h"
#include "global/multistart.h"
#include "lsq/bounded_solver.h"
#include "nlsq/gradient_monitor.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::config {
namespace {

// The table's default of a key, as YAML text.
std::string TableDefault(std::string_view path) {
  const KeySpec* spec = FindKeySpec(path);
  EXPECT_NE(spec, nullptr) << path;
  return spec != nullptr ? spec->default_yaml : std::string();
}

TEST(ConfigOptionDefaults, SolverOptionsMatchTheTable) {
  const lsq::SolverOptions built = nlsq::SolverOptionsOf(DefaultConfig().optimization.nlsq);
  const lsq::SolverOptions plain;
  EXPECT_EQ(plain.max_iterations, built.max_iterations);
  EXPECT_EQ(plain.ftol, built.ftol);
  EXPECT_EQ(plain.xtol, built.xtol);
  EXPECT_EQ(plain.gtol, built.gtol);
  EXPECT_EQ(plain.method, built.method);
  EXPECT_EQ(lsq::ToString(plain.method), TableDefault("optimization.nlsq.local_solver"));
}

TEST(ConfigOptionDefaults, LayoutOptionsMatchTheTable) {
  Config cfg = DefaultConfig();
  cfg.optimization.nlsq.anti_degeneracy.enable = true;  // else the layout is individual
  const model::LayoutOptions built = nlsq::LayoutOptionsFromConfig(cfg);
  const model::LayoutOptions plain;
  EXPECT_EQ(plain.mode, built.mode);
  EXPECT_EQ(plain.constant_scaling_threshold, built.constant_scaling_threshold);
  EXPECT_EQ(plain.fourier_order, built.fourier_order);
}

TEST(ConfigOptionDefaults, GradientMonitorOptionsMatchTheTable) {
  const auto built =
      nlsq::GradientMonitorOptions::FromConfig(DefaultConfig().optimization.nlsq.anti_degeneracy);
  const nlsq::GradientMonitorOptions plain;
  EXPECT_EQ(plain.enable, built.enable);
  EXPECT_EQ(plain.ratio_threshold, built.ratio_threshold);
  EXPECT_EQ(plain.consecutive_triggers, built.consecutive_triggers);
  EXPECT_EQ(plain.response, built.response);
}

TEST(ConfigOptionDefaults, AntiDegeneracyOptionsMatchTheTable) {
  const auto built =
      global::AntiDegeneracyOptions::FromConfig(DefaultConfig().optimization.nlsq.anti_degeneracy);
  const global::AntiDegeneracyOptions plain;
  EXPECT_EQ(plain.hierarchical, built.hierarchical);
  EXPECT_EQ(plain.always, built.always);
  EXPECT_EQ(plain.max_outer_iterations, built.max_outer_iterations);
  EXPECT_EQ(plain.outer_tolerance, built.outer_tolerance);
  EXPECT_EQ(plain.physical_max_iterations, built.physical_max_iterations);
  EXPECT_EQ(plain.per_angle_max_iterations, built.per_angle_max_iterations);
  EXPECT_EQ(plain.shear_weighting, built.shear_weighting);
  EXPECT_EQ(plain.alpha, built.alpha);
  EXPECT_EQ(plain.min_weight, built.min_weight);
  EXPECT_EQ(plain.update_frequency, built.update_frequency);
  EXPECT_EQ(plain.normalize, built.normalize);
}

TEST(ConfigOptionDefaults, RecoveryOptionsMatchTheTable) {
  const auto built =
      global::RecoveryOptions::FromConfig(DefaultConfig().optimization.nlsq.recovery);
  const global::RecoveryOptions plain;
  EXPECT_EQ(plain.on_stall, built.on_stall);
  EXPECT_EQ(plain.stall_starts, built.stall_starts);
  EXPECT_EQ(plain.phi0_restarts, built.phi0_restarts);
  EXPECT_EQ(plain.mirror_check, built.mirror_check);
  EXPECT_EQ(plain.velocity_scan, built.velocity_scan);
  EXPECT_EQ(plain.transport_scan, built.transport_scan);
  EXPECT_EQ(plain.start_screen, built.start_screen);
  EXPECT_EQ(plain.screen_max_points, built.screen_max_points);
}

TEST(ConfigOptionDefaults, GlobalStageOptionsMatchTheTable) {
  const auto built =
      global::GlobalStageOptions::FromConfig(DefaultConfig().optimization.nlsq.cmaes);
  const global::GlobalStageOptions plain;
  EXPECT_EQ(plain.enable, built.enable);
  EXPECT_EQ(plain.preset, built.preset);
  EXPECT_EQ(plain.max_generations, built.max_generations);
  EXPECT_EQ(plain.sigma, built.sigma);
  EXPECT_EQ(plain.sigma_warmstart, built.sigma_warmstart);
  EXPECT_EQ(plain.nlsq_warmstart, built.nlsq_warmstart);
  EXPECT_EQ(plain.warmstart_auto_skip, built.warmstart_auto_skip);
  EXPECT_EQ(plain.warmstart_skip_threshold, built.warmstart_skip_threshold);
  EXPECT_EQ(plain.popsize, built.popsize);
  EXPECT_EQ(plain.tol_fun, built.tol_fun);
  EXPECT_EQ(plain.tol_x, built.tol_x);
  EXPECT_EQ(plain.restart_strategy, built.restart_strategy);
  EXPECT_EQ(plain.max_restarts, built.max_restarts);
  EXPECT_EQ(plain.auto_select, built.auto_select);
  EXPECT_EQ(plain.scale_threshold, built.scale_threshold);
  EXPECT_EQ(plain.normalization_epsilon, built.normalization_epsilon);
  EXPECT_EQ(plain.refine_with_nlsq, built.refine_with_nlsq);
  EXPECT_EQ(plain.refinement_loss, built.refinement_loss);
  EXPECT_EQ(plain.seed, built.seed);
  EXPECT_EQ(plain.search_max_points, built.search_max_points);
}

TEST(ConfigOptionDefaults, MultiStartOptionsMatchTheTable) {
  const auto built =
      global::MultiStartOptions::FromConfig(DefaultConfig().optimization.nlsq.multi_start);
  const global::MultiStartOptions plain;
  EXPECT_EQ(plain.n_starts, built.n_starts);
  EXPECT_EQ(plain.seed, built.seed);
  EXPECT_EQ(plain.use_screening, built.use_screening);
  EXPECT_EQ(plain.screen_keep_fraction, built.screen_keep_fraction);
  EXPECT_EQ(plain.degeneracy_threshold, built.degeneracy_threshold);
  EXPECT_EQ(plain.sampling, built.sampling);
}

// Every choice key reads each of its names into the enum and echoes the value's first name:
// the key table's rule and the field's table are one list.
TEST(ConfigChoices, EveryNameOfTheRuleReadsBack) {
  int choice_fields = 0;
  for (const KeySpec& spec : ConfigKeyTable()) {
    if (!spec.field || spec.rule.kind != Rule::Kind::kEnum) continue;
    if (spec.path.find_first_of("[*") != std::string::npos) continue;
    for (const std::string& name : spec.rule.choices) {
      // A minimal config that sets this key alone.
      std::string yaml;
      std::string indent;
      std::string_view rest = spec.path;
      while (true) {
        const std::size_t dot = rest.find('.');
        const std::string_view part = rest.substr(0, dot);
        yaml += indent + std::string(part) + ":";
        if (dot == std::string_view::npos) break;
        yaml += "\n";
        indent += "  ";
        rest.remove_prefix(dot + 1);
      }
      yaml += " " + name + "\n";
      if (spec.path.rfind("experimental_data", 0) != 0) {
        yaml = "experimental_data:\n  file_path: c2.hdf\n" + yaml;
      }
      if (spec.path != "analysis_mode") yaml = "analysis_mode: static\n" + yaml;
      const Config c = ReadConfigString(yaml, "choice.yaml");
      // Aliases echo as their value's name; output.layout auto is resolved while reading.
      std::string expected = name;
      if (name == "mcmc") expected = "cmc";
      if (name == "independent") expected = "individual";
      if (name == "WARN") expected = "WARNING";  // Python's logging aliases
      if (name == "CRITICAL") expected = "ERROR";
      if (spec.path == "output.layout" && name == "auto") expected = "homodyne";
      EXPECT_EQ(spec.field.text(c), expected) << spec.path;
      ++choice_fields;
    }
  }
  EXPECT_GT(choice_fields, 20);
}

TEST(ConfigChoices, AliasesReadAsTheirValue) {
  EXPECT_EQ(FindChoice<FitMethod>("mcmc"), FitMethod::kCmc);
  EXPECT_EQ(ChoiceName(FitMethod::kCmc), "cmc");
  EXPECT_EQ(FindChoice<model::PerAngleMode>("independent"), model::PerAngleMode::kIndividual);
  EXPECT_EQ(ChoiceName(model::PerAngleMode::kIndividual), "individual");
  EXPECT_EQ(FindChoice<model::LossKind>("SOFT_L1", true), model::LossKind::kSoftL1);
  EXPECT_EQ(FindChoice<model::LossKind>("SOFT_L1"), std::nullopt);
  EXPECT_EQ(FindChoice<lsq::LocalMethod>("newton"), std::nullopt);
}

TEST(ConfigChoices, AnUnknownNameNamesTheKeyTheValueAndTheChoices) {
  struct Case {
    std::string yaml, key, value, choices;
  };
  const Case cases[] = {
      {"nlsq: {local_solver: newton}", "optimization.nlsq.local_solver", "newton",
       "lm, bnls, bntr, bntl"},
      {"nlsq: {loss: L1}", "optimization.nlsq.loss", "L1", "soft_l1"},
      {"nlsq: {anti_degeneracy: {per_angle_mode: averaged}}",
       "optimization.nlsq.anti_degeneracy.per_angle_mode", "averaged", "individual"},
      {"cmc: {sharding: {strategy: by_angle}}", "optimization.cmc.sharding.strategy", "by_angle",
       "stratified"},
      {"nlsq: {anti_degeneracy: {gradient_monitoring: {response: restart}}}",
       "optimization.nlsq.anti_degeneracy.gradient_monitoring.response", "restart", "reset"},
      {"nlsq: {anti_degeneracy: {regularization: {mode: l2}}}",
       "optimization.nlsq.anti_degeneracy.regularization.mode", "l2", "tikhonov"},
      {"nlsq: {multi_start: {sampling_strategy: sobol}}",
       "optimization.nlsq.multi_start.sampling_strategy", "sobol", "latin_hypercube, random"},
  };
  for (const Case& c : cases) {
    try {
      ReadConfigString("analysis_mode: static\noptimization:\n  " + c.yaml + "\n", "bad.yaml");
      ADD_FAILURE() << c.value << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(c.key), std::string::npos) << what;
      EXPECT_NE(what.find(c.value), std::string::npos) << what;
      EXPECT_NE(what.find(c.choices), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace homodyne::config
