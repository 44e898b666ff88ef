// Reading xpcsjax's configuration files: its shipped templates, its grouped parameter format,
// the value/vary of parameter_space.bounds, the scaling section and its flat
// optimization.nlsq keys (spec heterodyne.md §5).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "config/key_table.h"
#include "core/errors.h"
#include "test_data.h"

namespace homodyne::config {
namespace {

using ::testing::HasSubstr;

const std::string kHeader =
    "experimental_data:\n"
    "  data_folder_path: ./data/\n"
    "  data_file_name: run.hdf\n";
const std::string kTwo = kHeader + "analysis_mode: two_component\n";

Config Read(const std::string& yaml) { return ReadConfigString(yaml, "test.yaml"); }

// Unknown keys are errors here (--strict), as in the reader's own tests.
std::string ErrorOf(const std::string& yaml) {
  ReadOptions strict;
  strict.strict = true;
  try {
    ReadConfigString(yaml, "test.yaml", strict);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "config was accepted:\n" << yaml;
  return {};
}

// A note of either kind: the reader's (shown at -v) or a compatibility note (shown always).
bool HasNote(const Config& c, const std::string& part) {
  const auto has = [&](const std::string& n) { return n.find(part) != std::string::npos; };
  return std::any_of(c.notes.begin(), c.notes.end(), has) ||
         std::any_of(c.earlier_keys.begin(), c.earlier_keys.end(), has);
}

const EffectiveParameter& Param(const Config& c, const std::string& name) {
  const EffectiveParameter* p = c.FindParameter(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

// --- 1. The shipped templates --------------------------------------------------------------

TEST(ConfigXpcsjax, TheFourShippedTemplatesValidate) {
  const struct {
    const char* file;
    AnalysisMode mode;
  } templates[] = {{"xpcsjax_two_component.yaml", AnalysisMode::kTwoComponent},
                   {"xpcsjax_laminar_flow.yaml", AnalysisMode::kLaminarFlow},
                   {"xpcsjax_static_isotropic.yaml", AnalysisMode::kStatic},
                   {"xpcsjax_static_anisotropic.yaml", AnalysisMode::kStatic}};
  for (const auto& t : templates) {
    const std::string path = testing::TestDataPath(std::string("configs/xpcsjax/") + t.file);
    Config c;
    ASSERT_NO_THROW(c = ReadConfigFile(path)) << path;
    EXPECT_EQ(c.analysis_mode, t.mode) << path;
    // xpcsjax's keys without effect here are accepted, and listed as such.
    for (const char* key :
         {"analyzer_parameters.frame_step", "analyzer_parameters.time_unit",
          "experimental_data.cache_directory", "experimental_data.use_caching",
          "optimization.nlsq.x_scale", "optimization.nlsq.anti_degeneracy.execute_layers",
          "optimization.angle_filtering", "plotting.correlation_function", "plotting.fit_quality",
          "output.formats.yaml", "output.formats.npz", "output.include_diagnostics"}) {
      EXPECT_NE(std::find(c.accepted_keys_present.begin(), c.accepted_keys_present.end(), key),
                c.accepted_keys_present.end())
          << key << " in " << path;
      const KeySpec* spec = ResolveKeySpec(key);
      ASSERT_NE(spec, nullptr) << key;
      EXPECT_EQ(spec->status, KeyStatus::kAccepted) << key;
    }
  }
}

// L3's settings and L2's switch as two_component reads them: the xpcsjax template's enable: false
// with mode: relative regularises (only mode is read), with its lambda; without the section the
// mode is none and lambda unset (xpcsjax's heterodyne default 0.01 applies); an unknown mode
// is bad input.
TEST(ConfigXpcsjax, LayerSettingsAsTwoComponentReadsThem) {
  const Config t =
      ReadConfigFile(testing::TestDataPath("configs/xpcsjax/xpcsjax_two_component.yaml"));
  EXPECT_EQ(t.optimization.nlsq.anti_degeneracy.regularization_mode, RegularizationMode::kRelative);
  ASSERT_TRUE(t.optimization.nlsq.anti_degeneracy.regularization_lambda.has_value());
  EXPECT_EQ(*t.optimization.nlsq.anti_degeneracy.regularization_lambda, 1.0);
  const Config none = Read(kHeader);
  EXPECT_EQ(none.optimization.nlsq.anti_degeneracy.regularization_mode, RegularizationMode::kNone);
  EXPECT_FALSE(none.optimization.nlsq.anti_degeneracy.regularization_lambda.has_value());
  const Config flat = Read(kHeader + "optimization:\n  nlsq:\n    group_variance_lambda: 3.5\n");
  EXPECT_EQ(flat.optimization.nlsq.anti_degeneracy.regularization_lambda.value_or(0.0), 3.5);
  EXPECT_THAT(
      ErrorOf(kHeader + "optimization:\n  nlsq:\n    anti_degeneracy:\n      regularization:\n"
                        "        mode: nnoe\n"),
      HasSubstr("optimization.nlsq.anti_degeneracy.regularization.mode"));
  // L2 (two stages) runs only where hierarchical.enable is written (xpcsjax's default false).
  EXPECT_TRUE(t.optimization.nlsq.anti_degeneracy.hierarchical_enable_written);
  EXPECT_FALSE(none.optimization.nlsq.anti_degeneracy.hierarchical_enable_written);
  const Config flat_l2 = Read(kHeader + "optimization:\n  nlsq:\n    enable_hierarchical: true\n");
  EXPECT_TRUE(flat_l2.optimization.nlsq.anti_degeneracy.hierarchical_enable_written);
  EXPECT_TRUE(flat_l2.optimization.nlsq.anti_degeneracy.hierarchical_enable);
}

TEST(ConfigXpcsjax, KeysWithoutEffectGiveNotesOrErrorsWhereTheyWouldMatter) {
  Config c = Read(kHeader + "analyzer_parameters:\n  frame_step: 5\n  time_unit: ms\n");
  EXPECT_TRUE(HasNote(c, "frame_step = 5 is not used"));
  EXPECT_TRUE(HasNote(c, "time_unit = ms is not used"));
  c = Read(kHeader + "analyzer_parameters:\n  frame_step: 1\n  time_unit: seconds\n");
  EXPECT_FALSE(HasNote(c, "frame_step"));
  EXPECT_FALSE(HasNote(c, "time_unit"));
  EXPECT_THAT(ErrorOf(kHeader + "analyzer_parameters:\n  frame_step: 0\n"),
              HasSubstr("analyzer_parameters.frame_step"));

  EXPECT_THAT(ErrorOf(kHeader + "optimization:\n  nlsq:\n    x_scale: [1.0, 2.0]\n"),
              HasSubstr("optimization.nlsq.x_scale: only \"jac\""));
  EXPECT_NO_THROW(Read(kHeader + "optimization:\n  nlsq:\n    x_scale: jac\n"));
  const std::string layers = ErrorOf(
      kHeader + "optimization:\n  nlsq:\n    anti_degeneracy:\n      execute_layers: true\n");
  EXPECT_THAT(layers, HasSubstr("optimization.nlsq.anti_degeneracy.execute_layers"));
  EXPECT_THAT(layers, HasSubstr("not implemented"));
  EXPECT_THAT(ErrorOf(kHeader + "optimization:\n  nlsq:\n    execute_layers: true\n"),
              HasSubstr("optimization.nlsq.execute_layers"));

  c = Read(kHeader + "optimization:\n  angle_filtering:\n    enabled: true\n");
  EXPECT_TRUE(HasNote(c, "optimization.angle_filtering is not used"));
  EXPECT_NO_THROW(Read(kHeader + "plotting:\n  correlation_function: {dpi: 100}\n"));
}

// --- 2. The grouped format ------------------------------------------------------------------

TEST(ConfigXpcsjax, GroupedParametersSetStartBoundsAndVaryAndWinOverTheOtherSections) {
  const Config c = Read(kTwo +
                        "initial_parameters:\n"
                        "  parameter_names: [D0_ref, v0]\n"
                        "  values: [100.0, 50.0]\n"
                        "parameter_space:\n"
                        "  bounds:\n"
                        "    - {name: D0_ref, min: 0.0, max: 1000.0}\n"
                        "parameters:\n"
                        "  reference:\n"
                        "    D0_ref: {value: 5000.0, min: 200.0, max: 50000.0, vary: true}\n"
                        "  velocity:\n"
                        "    beta: {value: 0.0, vary: false}\n"  // kernel name of v_beta
                        "  angle:\n"
                        "    phi0: {min: -2.0, max: 2.0}\n"  // kernel name of phi0_het
                        "  fraction:\n"
                        "    f1: {vary: false}\n");
  const auto& d0 = Param(c, "D0_ref");
  EXPECT_DOUBLE_EQ(d0.initial, 5000.0);
  EXPECT_TRUE(d0.initial_from_config);
  EXPECT_DOUBLE_EQ(d0.min, 200.0);
  EXPECT_DOUBLE_EQ(d0.max, 50000.0);
  EXPECT_TRUE(d0.vary);
  const auto& vb = Param(c, "v_beta");
  EXPECT_DOUBLE_EQ(vb.initial, 0.0);
  EXPECT_TRUE(vb.initial_from_config);
  EXPECT_FALSE(vb.vary);
  const auto& phi = Param(c, "phi0_het");
  EXPECT_DOUBLE_EQ(phi.min, -2.0);
  EXPECT_DOUBLE_EQ(phi.max, 2.0);
  EXPECT_TRUE(phi.bounds_from_config);
  EXPECT_FALSE(phi.initial_from_config);
  EXPECT_FALSE(Param(c, "f1").vary);
  EXPECT_DOUBLE_EQ(Param(c, "v0").initial, 50.0);  // untouched by the grouped section
  EXPECT_TRUE(Param(c, "v0").vary);
  // The effective-config echo reads back to the same parameters.
  const Config again = ReadConfigString(EffectiveConfigYaml(c), "echo.yaml");
  ASSERT_EQ(again.parameters.size(), c.parameters.size());
  for (std::size_t i = 0; i < c.parameters.size(); ++i) {
    EXPECT_EQ(again.parameters[i].initial, c.parameters[i].initial) << c.parameters[i].name;
    EXPECT_EQ(again.parameters[i].min, c.parameters[i].min) << c.parameters[i].name;
    EXPECT_EQ(again.parameters[i].max, c.parameters[i].max) << c.parameters[i].name;
    EXPECT_EQ(again.parameters[i].vary, c.parameters[i].vary) << c.parameters[i].name;
  }
}

TEST(ConfigXpcsjax, GroupedParameterErrorsNameTheKeyAndLine) {
  std::string e = ErrorOf(kTwo + "parameters:\n  referense:\n    D0_ref: {value: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("parameters.referense: unknown key (line"));
  EXPECT_THAT(e, HasSubstr("did you mean parameters.reference?"));

  e = ErrorOf(kTwo + "parameters:\n  reference:\n    D0_rf: {value: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("parameters.reference.D0_rf: unknown parameter 'D0_rf' in group "
                           "'reference' (line 7)"));
  EXPECT_THAT(e, HasSubstr("did you mean parameters.reference.D0_ref?"));

  e = ErrorOf(kTwo + "parameters:\n  sample:\n    D0_ref: {value: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("'D0_ref' belongs to group 'reference'"));

  e = ErrorOf(kTwo + "parameters:\n  reference:\n    D0_ref: {valeu: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("parameters.reference.D0_ref.valeu: unknown key"));

  e = ErrorOf(kTwo + "parameters:\n  reference:\n    D0_ref: {min: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("min and max must be given together"));
  e = ErrorOf(kTwo + "parameters:\n  reference:\n    D0_ref: {min: 2.0, max: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("min (2) must be < max (1)"));

  e = ErrorOf(kTwo +
              "parameters:\n  velocity:\n    beta: {value: 1.0}\n    v_beta: {value: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("'v_beta' is given twice"));

  e = ErrorOf(kHeader +
              "analysis_mode: laminar_flow\nparameters:\n  reference:\n"
              "    D0_ref: {value: 1.0}\n");
  EXPECT_THAT(e, HasSubstr("parameters: the grouped parameter format applies to analysis_mode "
                           "two_component only (this file: laminar_flow)"));
}

TEST(ConfigXpcsjax, GroupedScalingSetsTheContrastAndOffsetBoundsAndStart) {
  const Config c = Read(kTwo +
                        "parameters:\n"
                        "  scaling:\n"
                        "    contrast: {value: 0.2, min: 0.05, max: 0.6, vary: false}\n"
                        "    offset: {value: 1.05}\n");
  EXPECT_DOUBLE_EQ(c.contrast.initial, 0.2);
  EXPECT_TRUE(c.contrast.initial_from_config);
  EXPECT_DOUBLE_EQ(c.contrast.min, 0.05);
  EXPECT_DOUBLE_EQ(c.contrast.max, 0.6);
  EXPECT_DOUBLE_EQ(c.offset.initial, 1.05);
  EXPECT_DOUBLE_EQ(c.offset.min, 0.5);  // registry bound kept
  EXPECT_TRUE(HasNote(c, "vary of contrast has no effect"));

  // The fit's start: the configured value for every angle instead of the data's estimate.
  const std::vector<model::ScalingEstimate> estimates(3, model::ScalingEstimate{0.4, 0.9});
  const ExpandedStart start = ExpandedStartFromConfig(c, c.analysis_mode, estimates);
  const model::ExpandedIndex index(c.analysis_mode, 3);
  for (int k = 0; k < 3; ++k) {
    EXPECT_DOUBLE_EQ(start.values[static_cast<std::size_t>(index.contrast(k))], 0.2);
    EXPECT_DOUBLE_EQ(start.values[static_cast<std::size_t>(index.offset(k))], 1.05);
    EXPECT_DOUBLE_EQ(start.bounds.lower[static_cast<std::size_t>(index.contrast(k))], 0.05);
  }
  // Without a configured start the estimate is used.
  const Config plain = Read(kTwo);
  const ExpandedStart est = ExpandedStartFromConfig(plain, plain.analysis_mode, estimates);
  EXPECT_DOUBLE_EQ(est.values[static_cast<std::size_t>(index.contrast(1))], 0.4);
  EXPECT_DOUBLE_EQ(est.values[static_cast<std::size_t>(index.offset(1))], 0.9);
}

// two_component's individual layout: xpcsjax's [0.1, 0.8] / [0.5, 1.5] unless the config's
// contrast (offset) bounds differ from the registry's [0, 1] ([0.5, 1.5]).
TEST(ConfigXpcsjax, IndividualScalingBoundsAreXpcsjaxsUnlessOtherBoundsAreConfigured) {
  const model::ExpandedIndex index(model::AnalysisMode::kTwoComponent, 3);
  const std::vector<model::ScalingEstimate> estimates(3, model::ScalingEstimate{0.4, 0.9});
  struct Case {
    std::string yaml;
    double c_lo, c_hi, o_lo, o_hi;
    bool changed;
  };
  const Case cases[] = {
      {"", 0.1, 0.8, 0.5, 1.5, true},
      // Bounds entries that restate the registry's (both templates write them).
      {"parameter_space:\n  bounds:\n    - {name: contrast, min: 0.0, max: 1.0}\n"
       "    - {name: offset, min: 0.5, max: 1.5}\n",
       0.1, 0.8, 0.5, 1.5, true},
      // Other bounds win, each group on its own.
      {"parameter_space:\n  bounds:\n    - {name: contrast, min: 0.05, max: 0.6}\n", 0.05, 0.6, 0.5,
       1.5, false},
      {"parameters:\n  scaling:\n    offset: {min: 0.9, max: 1.2}\n", 0.1, 0.8, 0.9, 1.2, true},
  };
  for (const Case& c : cases) {
    const Config cfg = Read(kTwo + c.yaml);
    ExpandedStart start = ExpandedStartFromConfig(cfg, cfg.analysis_mode, estimates);
    const model::Bounds before = start.bounds;
    EXPECT_EQ(ApplyTwoComponentIndividualBounds(cfg, index, start.bounds), c.changed) << c.yaml;
    for (int k = 0; k < 3; ++k) {
      const auto ck = static_cast<std::size_t>(index.contrast(k));
      const auto ok = static_cast<std::size_t>(index.offset(k));
      EXPECT_EQ(start.bounds.lower[ck], c.c_lo) << c.yaml;
      EXPECT_EQ(start.bounds.upper[ck], c.c_hi) << c.yaml;
      EXPECT_EQ(start.bounds.lower[ok], c.o_lo) << c.yaml;
      EXPECT_EQ(start.bounds.upper[ok], c.o_hi) << c.yaml;
    }
    for (int p = 0; p < index.n_phys; ++p) {  // physics untouched
      const auto e = static_cast<std::size_t>(index.phys(p));
      EXPECT_EQ(start.bounds.lower[e], before.lower[e]);
      EXPECT_EQ(start.bounds.upper[e], before.upper[e]);
    }
  }
}

// --- 3. parameter_space.bounds value/vary ----------------------------------------------------

TEST(ConfigXpcsjax, BoundsEntriesCarryValueAndVary) {
  const Config c = Read(kHeader +
                        "analysis_mode: laminar_flow\n"
                        "initial_parameters:\n"
                        "  values: [1000, -1.0, 0, 0.01, 0, 0, 0]\n"
                        "  active_parameters: [D0, alpha, beta]\n"
                        "parameter_space:\n"
                        "  bounds:\n"
                        "    - {name: D0, min: 100, max: 1e5, value: 2500, vary: false}\n"
                        "    - {name: phi0, min: -10, max: 10, vary: true}\n"
                        "    - {name: offset, min: 0.5, max: 1.5, value: 1.1}\n");
  EXPECT_DOUBLE_EQ(Param(c, "D0").initial, 2500.0);  // wins over values[]
  EXPECT_FALSE(Param(c, "D0").vary);
  EXPECT_TRUE(Param(c, "phi0").vary);  // wins over active_parameters
  EXPECT_FALSE(Param(c, "gamma_dot_t0").vary);
  EXPECT_DOUBLE_EQ(Param(c, "alpha").initial, -1.0);
  EXPECT_DOUBLE_EQ(c.offset.initial, 1.1);
  EXPECT_TRUE(c.offset.initial_from_config);
  EXPECT_FALSE(c.contrast.initial_from_config);
  // The echo keeps what the entries said.
  const Config again = ReadConfigString(EffectiveConfigYaml(c), "echo.yaml");
  EXPECT_FALSE(Param(again, "D0").vary);
  EXPECT_DOUBLE_EQ(Param(again, "D0").initial, 2500.0);
  EXPECT_DOUBLE_EQ(again.offset.initial, 1.1);
  EXPECT_TRUE(again.offset.initial_from_config);
}

// --- 4. The scaling section ----------------------------------------------------------------

TEST(ConfigXpcsjax, ScalingSectionStartsTheScalingAndWinsOverTheGroupedValue) {
  const Config c = Read(kTwo +
                        "initial_parameters:\n"
                        "  per_angle_scaling:\n"
                        "    contrast: [0.3, 0.3]\n"
                        "parameters:\n"
                        "  scaling:\n"
                        "    contrast: {value: 0.2}\n"
                        "scaling:\n"
                        "  n_angles: 4\n"
                        "  mode: individual\n"
                        "  initial_contrast: 0.15\n"
                        "  initial_offset: 0.98\n");
  EXPECT_DOUBLE_EQ(c.contrast.initial, 0.15);
  EXPECT_TRUE(c.contrast.initial_from_config);
  EXPECT_DOUBLE_EQ(c.offset.initial, 0.98);
  EXPECT_TRUE(HasNote(c, "initial_parameters.per_angle_scaling.contrast is not used"));
  for (const char* key : {"scaling.n_angles", "scaling.mode"}) {
    EXPECT_NE(std::find(c.accepted_keys_present.begin(), c.accepted_keys_present.end(), key),
              c.accepted_keys_present.end())
        << key;
  }
  EXPECT_THAT(ErrorOf(kTwo + "scaling:\n  mode: averaged\n"), HasSubstr("scaling.mode: must be"));
  // Any mode: the start is the scaling's, whatever the physics.
  const Config s = Read(kHeader + "scaling:\n  initial_contrast: 0.07\n");
  EXPECT_DOUBLE_EQ(s.contrast.initial, 0.07);
  EXPECT_TRUE(s.contrast.initial_from_config);
  EXPECT_FALSE(s.offset.initial_from_config);
}

// --- 5. Flat optimization.nlsq keys ----------------------------------------------------------

TEST(ConfigXpcsjax, FlatNlsqKeysWinOverTheirNestedForms) {
  const Config c = Read(kHeader +
                        "optimization:\n"
                        "  nlsq:\n"
                        "    tolerance: 1.0e-6\n"
                        "    ftol: 1.0e-9\n"
                        "    enable_cmaes: true\n"
                        "    cmaes_max_iterations: 40\n"
                        "    cmaes_restart_strategy: none\n"
                        "    multistart: true\n"
                        "    multistart_n: 7\n"
                        "    per_angle_mode: independent\n"
                        "    enable_hierarchical: false\n"
                        "    max_nfev: 500\n"
                        "    regularization_mode: relative\n"
                        "    cmaes:\n"
                        "      enable: false\n"
                        "      max_generations: 10\n"
                        "    anti_degeneracy:\n"
                        "      per_angle_mode: constant\n");
  const NlsqOptions& n = c.optimization.nlsq;
  EXPECT_DOUBLE_EQ(n.tolerance, 1e-9);
  EXPECT_TRUE(n.cmaes.enable);
  ASSERT_TRUE(n.cmaes.max_generations.has_value());
  EXPECT_EQ(*n.cmaes.max_generations, 40);
  EXPECT_EQ(n.cmaes.restart_strategy, homodyne::config::CmaesRestart::kNone);
  EXPECT_TRUE(n.multi_start.enable);
  EXPECT_EQ(n.multi_start.n_starts, 7);
  EXPECT_EQ(homodyne::config::ChoiceName(n.anti_degeneracy.per_angle_mode),
            "individual");  // xpcsjax's deprecated name
  EXPECT_FALSE(n.anti_degeneracy.hierarchical_enable);
  EXPECT_TRUE(HasNote(c,
                      "optimization.nlsq.enable_cmaes = true (xpcsjax's flat key) overrides "
                      "optimization.nlsq.cmaes.enable (false)"));
  // two_component's L3 reads the flat mode (no nested mode here: the default would be none).
  EXPECT_EQ(n.anti_degeneracy.regularization_mode, RegularizationMode::kRelative);
  // Flat keys without an equivalent are accepted and listed; typos are still rejected.
  for (const char* key : {"optimization.nlsq.max_nfev"}) {
    EXPECT_NE(std::find(c.accepted_keys_present.begin(), c.accepted_keys_present.end(), key),
              c.accepted_keys_present.end())
        << key;
  }
  const std::string e = ErrorOf(kHeader + "optimization:\n  nlsq:\n    enable_cmae: true\n");
  EXPECT_THAT(e, HasSubstr("optimization.nlsq.enable_cmae: unknown key"));
  EXPECT_THAT(e, HasSubstr("did you mean optimization.nlsq.enable_cmaes?"));
  // A flat key alone opens the anti-degeneracy system as its section would.
  const Config flat = Read(kHeader + "optimization:\n  nlsq:\n    per_angle_mode: fourier\n");
  EXPECT_EQ(homodyne::config::ChoiceName(flat.optimization.nlsq.anti_degeneracy.per_angle_mode),
            "fourier");
  EXPECT_TRUE(flat.optimization.nlsq.anti_degeneracy.section_present);
  // The flat key's value is checked by the nested key's rule.
  EXPECT_THAT(ErrorOf(kHeader + "optimization:\n  nlsq:\n    cmaes_restart_strategy: ipop\n"),
              HasSubstr("optimization.nlsq.cmaes_restart_strategy: must be one of"));
}

TEST(ConfigXpcsjax, EveryFlatKeyNamesAKnownNestedKey) {
  for (const auto& [flat, nested] : detail::FlatNlsqKeys()) {
    const KeySpec* f = FindKeySpec(flat);
    const KeySpec* n = FindKeySpec(nested);
    ASSERT_NE(f, nullptr) << flat;
    ASSERT_NE(n, nullptr) << nested;
    EXPECT_EQ(f->type, n->type) << flat;
    EXPECT_EQ(f->status, n->status) << flat;
    EXPECT_FALSE(static_cast<bool>(f->field)) << flat;  // applied by the reader, not bound
  }
}

// --- The result layout of an xpcsjax config -------------------------------------------------

TEST(ConfigXpcsjax, AnXpcsjaxConfigGetsXpcsjaxsLayoutUnlessTheKeySaysOtherwise) {
  // A homodyne config, and no config at all: homodyne's files.
  EXPECT_EQ(
      homodyne::config::ChoiceName(Read(kHeader + "analysis_mode: laminar_flow\n").output_layout),
      "homodyne");
  EXPECT_EQ(homodyne::config::ChoiceName(DefaultConfig().output_layout), "homodyne");
  // two_component exists in xpcsjax alone; so do the keys below in its templates and docs.
  const Config two = Read(kTwo);
  EXPECT_EQ(homodyne::config::ChoiceName(two.output_layout), "xpcsjax");
  EXPECT_THAT(two.output_layout_reason, HasSubstr("analysis_mode: two_component"));
  for (const std::string& extra :
       {std::string("optimization:\n  angle_filtering: {enabled: false}\n"),
        std::string("analyzer_parameters:\n  temporal: {dt: 0.1}\n"),
        std::string("logging:\n  modules: {xpcsjax.data.xpcs_loader: INFO}\n"),
        std::string("output:\n  formats: {npz: true}\n")}) {
    const Config c = Read(kHeader + "analysis_mode: static\n" + extra);
    EXPECT_EQ(homodyne::config::ChoiceName(c.output_layout), "xpcsjax") << extra;
    EXPECT_THAT(OutputLayoutLine(c), HasSubstr("an xpcsjax config")) << extra;
  }
  // The key decides when given.
  EXPECT_EQ(homodyne::config::ChoiceName(Read(kTwo + "output: {layout: homodyne}\n").output_layout),
            "homodyne");
  EXPECT_EQ(
      homodyne::config::ChoiceName(Read(kHeader + "output: {layout: xpcsjax}\n").output_layout),
      "xpcsjax");
  EXPECT_THAT(OutputLayoutLine(Read(kTwo + "output: {layout: homodyne}\n")),
              HasSubstr("output.layout: homodyne"));
}

}  // namespace
}  // namespace homodyne::config
