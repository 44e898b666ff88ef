// The CMA-ES strategy on serial objectives and the configuration of the global stage:
// bounds are never left, a seed gives the same search, a stored state continues the same
// search, the budget plan and selection follow homodyne, and bad settings are rejected
// with the key named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_store.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "global/cmaes.h"
#include "global/global_stage.h"
#include "outputs/nlsq_result_files.h"

namespace homodyne::global {
namespace {

using outputs::AnalysisResultsJson;

using ::testing::HasSubstr;

// A shifted, badly scaled ellipsoid whose minimum (χ² = 0) is inside the box; counts the
// points it sees outside the bounds.
struct Ellipsoid {
  std::vector<double> lower = {-5.0, 0.0, 1e3, -1e-3};
  std::vector<double> upper = {5.0, 1.0, 1e5, 1e-3};
  std::vector<double> optimum = {1.5, 0.25, 2e4, 2e-4};
  int outside = 0;
  void operator()(std::span<const std::vector<double>> xs, std::vector<double>& chi2) {
    chi2.clear();
    for (const auto& x : xs) {
      double f = 0.0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i] < lower[i] || x[i] > upper[i]) ++outside;
        const double u = (x[i] - optimum[i]) / (upper[i] - lower[i]);
        f += std::pow(10.0, static_cast<double>(i)) * u * u;
      }
      chi2.push_back(f);
    }
  }
};

CmaesOptions SingleRun() {
  CmaesOptions o;
  o.max_generations = 400;
  o.restart_strategy = RestartStrategy::kNone;
  return o;
}

TEST(NlsqCmaes, FindsTheMinimumOfAScaledEllipsoidWithoutLeavingTheBox) {
  Ellipsoid f;
  Cmaes es(SingleRun(), {-4.0, 0.9, 9e4, -9e-4}, f.lower, f.upper);
  EXPECT_EQ(es.base_popsize(), 8);  // 4 + ⌊3 ln 4⌋
  while (!es.finished()) es.Step(std::ref(f));
  const CmaesSummary s = es.Summary();
  EXPECT_EQ(f.outside, 0);
  EXPECT_LT(s.chi2, 1e-12);
  for (std::size_t i = 0; i < f.optimum.size(); ++i) {
    EXPECT_NEAR(s.x[i], f.optimum[i], 1e-5 * (f.upper[i] - f.lower[i])) << i;
  }
  EXPECT_TRUE(s.stop == CmaesStop::kTolX || s.stop == CmaesStop::kTolFun) << ToString(s.stop);
  EXPECT_EQ(s.evaluations, static_cast<std::int64_t>(s.generations) * 8);
}

TEST(NlsqCmaes, ExtremeStepsStayOnTheBounds) {
  Cmaes es(SingleRun(), {0.0, 0.0}, {-1.0, 2.0}, {1.0, 2.0});  // the second entry is fixed
  EXPECT_EQ(es.num_searched(), 1);
  const std::vector<double> lo = es.ToParameters(std::vector<double>{-1e6});
  const std::vector<double> hi = es.ToParameters(std::vector<double>{1e6});
  EXPECT_EQ(lo[0], -1.0);
  EXPECT_EQ(hi[0], 1.0);
  EXPECT_EQ(lo[1], 2.0);
  EXPECT_EQ(hi[1], 2.0);
}

TEST(NlsqCmaes, StoredStateContinuesTheSameSearch) {
  CmaesOptions o = SingleRun();
  o.restart_strategy = RestartStrategy::kBipop;
  o.max_restarts = 3;
  o.max_generations = 60;
  const std::vector<double> x0 = {-4.0, 0.9, 9e4, -9e-4};
  Ellipsoid f;
  Cmaes whole(o, x0, f.lower, f.upper);
  while (!whole.finished()) whole.Step(std::ref(f));

  Cmaes first(o, x0, f.lower, f.upper);
  for (int g = 0; g < 75; ++g) first.Step(std::ref(f));  // into the second run
  checkpoint::CheckpointRecord record;
  first.state().Store(record, "cmaes.");
  Cmaes second(o, x0, f.lower, f.upper);
  second.Restore(CmaesState::Load(record, "cmaes."));
  EXPECT_EQ(second.state().run, 1);
  while (!second.finished()) second.Step(std::ref(f));

  const CmaesSummary a = whole.Summary(), b = second.Summary();
  ASSERT_EQ(a.x.size(), b.x.size());
  EXPECT_EQ(std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(double)), 0);
  EXPECT_EQ(a.chi2, b.chi2);
  EXPECT_EQ(a.generations, b.generations);
  EXPECT_EQ(a.restarts, 3);
  ASSERT_EQ(a.runs.size(), 4u);
  // bipop: large (2λ) and small (λ/2…λ) runs alternate.
  EXPECT_EQ(a.runs[0].popsize, 16);
  EXPECT_LE(a.runs[1].popsize, 8);
  EXPECT_GE(a.runs[1].popsize, 4);
  EXPECT_EQ(a.runs[2].popsize, 16);
  EXPECT_EQ(a.stop, CmaesStop::kMaxRestarts);

  // A state of another problem is refused.
  Cmaes other(o, {0.0, 0.5}, {-1.0, 0.0}, {1.0, 1.0});
  EXPECT_THROW(other.Restore(CmaesState::Load(record, "cmaes.")), Error);
}

// A region where the model cannot be evaluated (NaN) ranks last and does not stop the
// search; the start lies inside it.
TEST(NlsqCmaes, NonFiniteValuesRankLast) {
  Ellipsoid f;
  auto nan_region = [&](std::span<const std::vector<double>> xs, std::vector<double>& chi2) {
    f(xs, chi2);
    for (std::size_t k = 0; k < xs.size(); ++k) {
      if (xs[k][0] < -3.0) chi2[k] = std::numeric_limits<double>::quiet_NaN();
    }
  };
  Cmaes es(SingleRun(), {-4.0, 0.9, 9e4, -9e-4}, f.lower, f.upper);
  while (!es.finished()) es.Step(nan_region);
  EXPECT_LT(es.Summary().chi2, 1e-12);
}

// --- Budget, selection and configuration ------------------------------------------------

TEST(NlsqCmaes, BudgetFollowsPresetAndScaleRatio) {
  GlobalStageOptions o;
  o.preset = config::CmaesPreset::kGlobal;
  // Laminar averaged: n = 9 → λ0 = 10; default bounds give ratio 1e6 (middle branch).
  CmaesBudget b = PlanCmaesBudget(o, 9, 1e6);
  EXPECT_TRUE(b.adapted);
  EXPECT_EQ(b.popsize_default, 10);
  EXPECT_EQ(b.popsize, 100);
  EXPECT_EQ(b.max_generations, 400);
  b = PlanCmaesBudget(o, 9, 2e6);
  EXPECT_EQ(b.popsize, 200);
  EXPECT_EQ(b.max_generations, 600);
  b = PlanCmaesBudget(o, 9, 5e3);
  EXPECT_EQ(b.popsize, 50);
  EXPECT_EQ(b.max_generations, 200);
  b = PlanCmaesBudget(o, 9, 10.0);
  EXPECT_FALSE(b.adapted);
  EXPECT_EQ(b.popsize, 10);
  // Explicit values are used as given.
  o.popsize = 12;
  o.max_generations = 30;
  b = PlanCmaesBudget(o, 9, 1e6);
  EXPECT_FALSE(b.adapted);
  EXPECT_EQ(b.popsize, 12);
  EXPECT_EQ(b.max_generations, 30);
  o.preset = config::CmaesPreset::kFast;
  o.max_generations.reset();
  EXPECT_EQ(PlanCmaesBudget(o, 9, 1.0).max_generations, 50);
}

const std::string kData =
    "experimental_data:\n  data_folder_path: ./data/\n  data_file_name: run.hdf\n"
    "analysis_mode: laminar_flow\n";

config::Config Read(const std::string& cmaes) {
  return config::ReadConfigString(kData + "optimization:\n  nlsq:\n    cmaes:\n" + cmaes,
                                  "test.yaml", config::ReadOptions{});
}

std::string ErrorOf(const std::string& cmaes) {
  try {
    GlobalStageOptions::FromConfig(Read(cmaes).optimization.nlsq.cmaes);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << cmaes;
  return {};
}

TEST(NlsqCmaes, ConfigKeysAreReadAndSelectTheStage) {
  const config::Config c = Read(
      "      enable: true\n      preset: cmaes-fast\n      seed: 7\n      popsize: 12\n"
      "      restart_strategy: none\n      sigma: 0.3\n");
  const GlobalStageOptions o = GlobalStageOptions::FromConfig(c.optimization.nlsq.cmaes);
  EXPECT_TRUE(o.enable);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.popsize, 12);
  EXPECT_EQ(o.restart_strategy, RestartStrategy::kNone);
  EXPECT_EQ(o.PresetGenerations(), 50);
  EXPECT_DOUBLE_EQ(o.sigma, 0.3);
  // Default laminar bounds span 1e6 (γ̇0 width 0.1 … D0 width 1e5 and more).
  const GlobalSelection s = SelectGlobalStage(c, o);
  EXPECT_TRUE(s.run) << s.reason;
  EXPECT_GE(s.scale_ratio, 1000.0);
  GlobalStageOptions high = o;
  high.scale_threshold = 10 * s.scale_ratio;
  EXPECT_FALSE(SelectGlobalStage(c, high).run);
  high.auto_select = false;
  EXPECT_TRUE(SelectGlobalStage(c, high).run);
  // Defaults: disabled, seed 42, preset cmaes.
  const GlobalStageOptions d =
      GlobalStageOptions::FromConfig(Read("      enable: false\n").optimization.nlsq.cmaes);
  EXPECT_FALSE(d.enable);
  EXPECT_EQ(d.seed, 42u);
  EXPECT_EQ(d.PresetGenerations(), 100);
  EXPECT_EQ(d.restart_strategy, RestartStrategy::kBipop);
}

TEST(NlsqCmaes, BadValuesNameTheirKey) {
  const std::string k = "optimization.nlsq.cmaes.";
  EXPECT_THAT(ErrorOf("      sigma: 1.5\n"), HasSubstr(k + "sigma"));
  EXPECT_THAT(ErrorOf("      sigma_warmstart: 0\n"), HasSubstr(k + "sigma_warmstart"));
  EXPECT_THAT(ErrorOf("      popsize: 3\n"), HasSubstr(k + "popsize"));
  EXPECT_THAT(ErrorOf("      preset: fast\n"), HasSubstr(k + "preset"));
  EXPECT_THAT(ErrorOf("      restart_strategy: ipop\n"), HasSubstr(k + "restart_strategy"));
  EXPECT_THAT(ErrorOf("      max_restarts: -1\n"), HasSubstr(k + "max_restarts"));
  EXPECT_THAT(ErrorOf("      max_generations: 0\n"), HasSubstr(k + "max_generations"));
  EXPECT_THAT(ErrorOf("      tol_x: 0\n"), HasSubstr(k + "tol_x"));
  EXPECT_THAT(ErrorOf("      seed: -2\n"), HasSubstr(k + "seed"));
  EXPECT_THAT(ErrorOf("      warmstart_skip_threshold: 0\n"),
              HasSubstr(k + "warmstart_skip_threshold"));
  // The options' own checks (the programmatic path) name the keys too.
  CmaesOptions c;
  c.sigma = 0.0;
  try {
    c.Validate();
    ADD_FAILURE() << "sigma 0 accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(k + "sigma"));
  }
  GlobalStageOptions g;
  g.popsize = 2;
  try {
    g.Validate();
    ADD_FAILURE() << "popsize 2 accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(k + "popsize"));
  }
}

TEST(NlsqCmaes, ResultFileCarriesTheGlobalSearch) {
  nlsq::FitReport r;
  nlsq::GlobalSearchReport g;
  g.selected = "cmaes_refined";
  g.generations = 12;
  g.evaluations = 1200;
  g.cmaes_chi_squared = 3.5;
  g.refined_chi_squared = std::numeric_limits<double>::quiet_NaN();
  r.global_search = g;
  const auto j = nlohmann::json::parse(outputs::AnalysisResultsJson(r));
  ASSERT_TRUE(j.contains("global_search"));
  EXPECT_EQ(j["global_search"]["selected"], "cmaes_refined");
  EXPECT_EQ(j["global_search"]["evaluations"], 1200);
  EXPECT_EQ(j["global_search"]["cmaes_chi_squared"], 3.5);
  EXPECT_TRUE(j["global_search"]["refined_chi_squared"].is_null());
  r.global_search.reset();
  EXPECT_FALSE(nlohmann::json::parse(outputs::AnalysisResultsJson(r)).contains("global_search"));
}

}  // namespace
}  // namespace homodyne::global
