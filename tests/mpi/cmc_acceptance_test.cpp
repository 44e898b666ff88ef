// CMC acceptance on homodyne-synth data (issue #6):
//  * static and laminar_flow: every physical parameter's truth lies within 4 posterior
//    standard deviations of the combined posterior mean (a gross-error check on one dataset;
//    the nominal coverage is the calibration test's job), and every posterior mean is within
//    2 posterior standard deviations of the NLSQ estimate (the spec asks for < 3);
//  * calibration: over 24 seeded static datasets, the 90 % intervals of D0, alpha and
//    D_offset cover the truth at a rate inside the two-sided 99 % binomial acceptance region
//    of Binomial(24, 0.9), per parameter. (These tiny datasets pin D_offset only loosely,
//    so the shard means of D_offset vary more than homodyne's heterogeneity rule allows:
//    the abort is switched off there, as homodyne's laminar template does.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "cmc/cmc_fit.h"
#include "config/config_reader.h"
#include "coverage_stats.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::cmc {
namespace {

const std::vector<std::string> kStaticNames{"D0", "alpha", "D_offset"};
const std::vector<std::string> kLaminarNames{
    "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};

config::Config Config(const std::string& file, bool laminar, int seed, int shards,
                      bool heterogeneity_abort = true, bool informed_priors = true) {
  const auto p = std::filesystem::path(file);
  std::string yaml = std::string("analysis_mode: ") + (laminar ? "laminar_flow" : "static") +
                     "\nanalyzer_parameters:\n  dt: 0.1\n  scattering: {wavevector_q: 0.0054}\n"
                     "  geometry: {stator_rotor_gap: 2000000}\n"
                     "experimental_data:\n  data_folder_path: " +
                     p.parent_path().string() + "\n  data_file_name: " + p.filename().string() +
                     "\ninitial_parameters:\n";
  yaml += laminar ? "  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, "
                    "gamma_dot_t_offset, phi0]\n  values: [15000, -0.3, 0, 0.002, 0.1, 0.0001, 2]\n"
                  : "  parameter_names: [D0, alpha, D_offset]\n  values: [20000, -0.3, 0]\n";
  yaml += "optimization:\n  cmc:\n    per_angle_mode: auto\n    seed: " + std::to_string(seed) +
          "\n    sharding: {num_shards: " + std::to_string(shards) + "}\n" +
          "    validation: {heterogeneity_abort: " + (heterogeneity_abort ? "true" : "false") +
          ", use_nlsq_informed_priors: " + (informed_priors ? "true" : "false") + "}\n";
  return config::ReadConfigString(yaml, "cmc-acceptance");
}

// Writes the dataset (rank 0) into `dir` and returns its path on every rank.
std::string WriteData(const testing::MpiTempDir& dir, const Comm& world, const std::string& tag,
                      bool laminar, const std::map<std::string, double>& truth, int frames,
                      std::vector<double> phi, double noise, std::uint64_t seed) {
  const std::string path = dir.file("cmc_acc_" + tag + ".h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = frames;
    o.phi_deg = std::move(phi);
    o.params = truth;
    o.contrast = 0.3;
    o.offset = 1.0;
    o.noise = noise;
    o.seed = seed;
    synth::WriteSyntheticDataset(Config(path, laminar, 1, 1), o);
  });
  world.Barrier();
  return path;
}

// Quantile q of the combined draws of parameter `name`.
double Quantile(const CmcRunResult& r, const std::string& name, double q) {
  const auto it = std::find(r.names.begin(), r.names.end(), name);
  EXPECT_NE(it, r.names.end()) << name;
  return testing::DrawQuantile(r, static_cast<std::size_t>(it - r.names.begin()), q);
}

const ParameterSummary& Summary(const CmcRunResult& r, const std::string& name) {
  const auto it = std::find_if(r.parameters.begin(), r.parameters.end(),
                               [&](const ParameterSummary& p) { return p.name == name; });
  if (it == r.parameters.end()) throw std::runtime_error("no summary for " + name);
  return *it;
}

// Truth within 4 posterior sd of the posterior mean, posterior mean within 2 posterior sd of
// NLSQ. (Until session 3 this asked for the truth inside each parameter's 95 % interval: for
// a correct sampler that fails on 1 − 0.95³ = 14 % of static and 1 − 0.95⁷ = 30 % of laminar
// datasets, so it passed or failed with the seed — a change in the last bits of the
// likelihood, which reshuffles the draws, moved alpha's upper 97.5 % quantile from just
// above the truth to 0.0003 below it. A 4-sd miss has probability < 1e-4 per parameter for
// a normal posterior.)
void CheckAgainstTruthAndNlsq(const Comm& world, const config::Config& cfg,
                              const std::vector<std::string>& names,
                              const std::map<std::string, double>& truth, int warmup, int samples) {
  nlsq::NlsqRunOptions no;
  no.print_progress = false;
  const auto warm = nlsq::RunNlsqFit(world, cfg, no, Logger::Silent());
  CmcRunOptions o;
  o.warm_start = &warm;
  o.num_warmup = warmup;
  o.num_samples = samples;
  o.num_chains = 2;
  o.threads = 2;
  o.print_progress = false;
  const CmcRunResult r = RunCmcFit(world, cfg, o, Logger::Silent());
  if (world.rank() != 0) return;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    const double lo = Quantile(r, n, 0.025), hi = Quantile(r, n, 0.975);
    const auto& s = Summary(r, n);
    EXPECT_LE(std::abs(s.mean - truth.at(n)), 4.0 * s.std)
        << n << ": CMC " << s.mean << " ± " << s.std << ", truth " << truth.at(n)
        << ", 95% interval [" << lo << ", " << hi << "]";
    EXPECT_LE(std::abs(s.mean - warm.report.physical_values[i]), 2.0 * s.std)
        << n << ": CMC " << s.mean << " ± " << s.std << ", NLSQ " << warm.report.physical_values[i];
  }
}

TEST(CmcAcceptance, StaticTruthNearThePosteriorAndNlsqAgreement) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "cmc_acceptance");
  const std::map<std::string, double> truth{{"D0", 25000.0}, {"alpha", -0.5}, {"D_offset", 30.0}};
  const auto path = WriteData(dir, world, "static", false, truth, 40, {0, 60, 120}, 0.004, 11);
  CheckAgainstTruthAndNlsq(world, Config(path, false, 3, 2), kStaticNames, truth, 200, 200);
}

TEST(CmcAcceptance, LaminarTruthNearThePosteriorAndNlsqAgreement) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "cmc_acceptance");
  const std::map<std::string, double> truth{{"D0", 20000.0},    {"alpha", -0.4},
                                            {"D_offset", 10.0}, {"gamma_dot_t0", 0.003},
                                            {"beta", 0.2},      {"gamma_dot_t_offset", 2e-4},
                                            {"phi0", 4.0}};
  const auto path =
      WriteData(dir, world, "laminar", true, truth, 40, {-20, 25, 70, 115, 160}, 0.003, 12);
  CheckAgainstTruthAndNlsq(world, Config(path, true, 5, 2, false, false), kLaminarNames, truth, 250,
                           250);
}

TEST(CmcAcceptance, NinetyPercentIntervalsCoverAtTheNominalRate) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "cmc_acceptance");
  constexpr int kDatasets = 24;
  const std::map<std::string, double> truth{{"D0", 25000.0}, {"alpha", -0.5}, {"D_offset", 30.0}};
  std::map<std::string, int> covered;
  for (int d = 0; d < kDatasets; ++d) {
    const auto path = WriteData(dir, world, "cov", false, truth, 30, {0, 60, 120}, 0.005,
                                1000 + static_cast<std::uint64_t>(d));
    CmcRunOptions o;
    o.num_warmup = 150;
    o.num_samples = 200;
    o.num_chains = 2;
    o.threads = 2;
    o.print_progress = false;
    const CmcRunResult r =
        RunCmcFit(world, Config(path, false, 100 + d, 2, false), o, Logger::Silent());
    if (world.rank() != 0) continue;
    for (const auto& n : kStaticNames) {
      covered[n] += Quantile(r, n, 0.05) <= truth.at(n) && truth.at(n) <= Quantile(r, n, 0.95);
    }
  }
  if (world.rank() != 0) return;
  const auto [lo, hi] = testing::BinomialRegion(kDatasets, 0.9);
  for (const auto& n : kStaticNames) {
    RecordProperty("coverage_" + n, covered[n]);
    EXPECT_GE(covered[n], lo) << n << ": " << covered[n] << "/" << kDatasets << " covered";
    EXPECT_LE(covered[n], hi) << n << ": " << covered[n] << "/" << kDatasets << " covered";
    std::printf("90%% interval coverage of %s: %d/%d (99%% region [%d, %d])\n", n.c_str(),
                covered[n], kDatasets, lo, hi);
  }
}

}  // namespace
}  // namespace homodyne::cmc
