#include "outputs/cmc_result_files.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "cmc/bimodality.h"
#include "cmc/mode_aware.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "io/writers.h"
#include "outputs/npz_file.h"

namespace homodyne::outputs {

using cmc::BimodalParameter;
using cmc::CmcRunResult;
using cmc::ModeCluster;
using cmc::NlsqComparison;
using cmc::ShardDiagnostics;

namespace {

nlohmann::json NumberOrNull(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Whether σ was sampled or fixed, and at what (parameters.json and diagnostics.json).
nlohmann::json NoiseSigmaJson(const CmcRunResult& r) {
  using nlohmann::json;
  return r.known_sigma > 0.0 ? json{{"sampled", false}, {"value", r.known_sigma}}
                             : json{{"sampled", true}, {"value", nullptr}};
}

// Per parameter, the worst shard among those combined (all shards when none was): the
// largest R̂ (NaN: none finite) and the smallest ESS (+inf: none). diagnostics.json's
// per_parameter_diagnostics and samples.npz's r_hat and ess.
struct WorstShard {
  std::vector<double> rhat, ess;
};
WorstShard WorstShardDiagnostics(const CmcRunResult& r) {
  bool any_used = false;
  for (const auto& d : r.shards) any_used = any_used || d.used;
  WorstShard w;
  for (std::size_t p = 0; p < r.names.size(); ++p) {
    double rhat = -HUGE_VAL, ess = HUGE_VAL;
    bool have_rhat = false;
    for (const auto& d : r.shards) {
      if ((any_used && !d.used) || p >= d.rhat.size()) continue;
      if (std::isfinite(d.rhat[p])) {
        rhat = std::max(rhat, d.rhat[p]);
        have_rhat = true;
      }
      ess = std::min(ess, d.Ess(p));
    }
    w.rhat.push_back(have_rhat ? rhat : std::nan(""));
    w.ess.push_back(ess);
  }
  return w;
}

// cmc/diagnostics.json: homodyne's keys (convergence.per_parameter_diagnostics,
// ess_threshold, sampling_efficiency, posterior_checks, cmc_specific.shard_summary and
// overall_diagnostics) computed on the shards' own chains, plus ours.
nlohmann::json DiagnosticsJson(const CmcRunResult& r, const nlohmann::json& shards,
                               const nlohmann::json& rejected, const nlohmann::json& bimodality) {
  using nlohmann::json;
  json mode_aware = nullptr;  // not tried: no parameter bimodal in enough shards
  if (r.mode_aware.applied || !r.mode_aware.reason.empty()) {
    json clusters = json::array();
    for (const ModeCluster& c : r.mode_aware.clusters) {
      clusters.push_back({{"population", c.label},
                          {"shards", c.shards},
                          {"weight", c.weight},
                          {"draws", c.draws}});
    }
    mode_aware = {{"applied", r.mode_aware.applied},
                  {"reason", r.mode_aware.reason},
                  {"populations", clusters}};
  }
  // homodyne's fixed thresholds of this file (its per-parameter flags); the run's verdict,
  // all_chains_converged, uses the configured ones (CmcRunResult::rhat_threshold).
  constexpr double kRhatThreshold = 1.1;
  constexpr double kEssThreshold = 400.0;
  const WorstShard worst = WorstShardDiagnostics(r);
  json per_parameter = json::array();
  double ess_sum = 0.0;
  for (std::size_t p = 0; p < r.names.size(); ++p) {
    const double rhat = worst.rhat[p], ess = worst.ess[p];
    const bool have_rhat = std::isfinite(rhat);
    if (std::isfinite(ess)) ess_sum += ess;
    per_parameter.push_back({{"name", r.names[p]},
                             {"r_hat", have_rhat ? json(rhat) : json(nullptr)},
                             {"ess", NumberOrNull(ess)},
                             {"converged", have_rhat && rhat < kRhatThreshold},
                             {"deterministic", false}});
  }
  std::int64_t divergences = 0, treedepth = 0;
  int converged_shards = 0;
  std::vector<double> acceptance;
  for (const auto& d : r.shards) {
    divergences += d.divergences;
    treedepth += d.treedepth_hits;
    converged_shards += d.max_rhat < kRhatThreshold ? 1 : 0;
    acceptance.push_back(d.acceptance_rate);
  }
  json acceptance_stats = nullptr;
  if (!acceptance.empty()) {
    double mean = 0.0, var = 0.0;
    for (double a : acceptance) mean += a;
    mean /= static_cast<double>(acceptance.size());
    for (double a : acceptance) var += (a - mean) * (a - mean);
    acceptance_stats = {{"mean", mean},
                        {"min", *std::min_element(acceptance.begin(), acceptance.end())},
                        {"max", *std::max_element(acceptance.begin(), acceptance.end())},
                        {"std", std::sqrt(var / static_cast<double>(acceptance.size()))}};
  }
  const double total_draws = static_cast<double>(r.num_samples) * r.num_chains;
  const int n_shards = static_cast<int>(r.shards.size());
  return {
      {"convergence",
       {{"all_chains_converged", r.all_converged},
        {"r_hat_threshold", kRhatThreshold},
        {"per_parameter_diagnostics", per_parameter},
        {"ess_threshold", kEssThreshold}}},
      {"sampling_efficiency",
       {{"acceptance_rate", r.acceptance_rate},
        {"target_acceptance", r.target_accept},
        {"divergences", divergences},
        {"tree_depth_warnings", treedepth}}},
      {"posterior_checks",
       {{"effective_sample_size_ratio",
         NumberOrNull(r.names.empty() || total_draws <= 0.0
                          ? std::nan("")
                          : ess_sum / static_cast<double>(r.names.size()) / total_draws)}}},
      {"cmc_specific",
       {{"shard_summary",
         {{"num_shards", n_shards},
          {"shards_converged", converged_shards},
          {"convergence_rate",
           n_shards > 0 ? static_cast<double>(converged_shards) / n_shards : 0.0},
          {"acceptance_rate_stats", acceptance_stats}}},
        {"overall_diagnostics",
         {{"combination_success", r.shards_used > 0},
          {"n_shards_converged", converged_shards},
          {"n_shards_total", n_shards},
          {"success_rate", n_shards > 0 ? static_cast<double>(r.shards_used) / n_shards : 0.0}}},
        {"sampled_coordinates", r.sampled_coordinates},
        {"noise_sigma", NoiseSigmaJson(r)},
        {"combination_method", r.combination_method},
        {"num_shards", r.num_shards},
        {"num_shards_used", r.shards_used},
        {"rejected_shards", rejected},
        {"warnings", r.warnings},
        {"bimodality", bimodality},
        {"mode_aware_consensus", mode_aware},
        {"shards", shards}}}};
}

}  // namespace

namespace {

using nlohmann::json;

// The sampling_summary block of parameters.json and analysis_results_cmc.json.
json SamplingSummaryJson(const CmcRunResult& r) {
  return {{"n_samples", r.num_samples},
          {"n_warmup", r.num_warmup},
          {"n_chains", r.num_chains},
          {"n_shards", r.num_shards},
          {"noise_sigma", NoiseSigmaJson(r)},
          {"total_samples",
           static_cast<std::int64_t>(r.draws.size() / std::max<std::size_t>(1, r.names.size()))},
          {"execution_time", r.seconds},     // homodyne's name
          {"computation_time", r.seconds}};  // ours before
}

// cmc/parameters.json: posterior means and sds, per-angle scaling averaged, convergence.
void WriteCmcParametersJson(const std::filesystem::path& dir, const CmcRunResult& r,
                            const std::string& timestamp, const json& sampling) {
  json params;
  double c_mean = 0, c_var = 0, o_mean = 0, o_var = 0;
  int n_angles = 0;
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0) {
      c_mean += p.mean;
      c_var += p.std * p.std;
      ++n_angles;
    } else if (p.name.rfind("offset_", 0) == 0) {
      o_mean += p.mean;
      o_var += p.std * p.std;
    } else {
      params[p.name] = {{"mean", p.mean}, {"std", p.std}};
      // As the NLSQ's parameters.json: a held parameter is its value, not a posterior.
      if (p.held) params[p.name]["vary"] = false;
    }
  }
  if (n_angles > 0) {
    params["contrast"] = {{"mean", c_mean / n_angles}, {"std", std::sqrt(c_var / n_angles)}};
    params["offset"] = {{"mean", o_mean / n_angles}, {"std", std::sqrt(o_var / n_angles)}};
  }
  json per_angle = json::array();
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0 || p.name.rfind("offset_", 0) == 0) {
      per_angle.push_back({{"name", p.name}, {"mean", p.mean}, {"std", p.std}});
    }
  }
  // homodyne's min_r_hat: the lowest R̂ of any sampled parameter (of the kept shards here).
  double min_rhat = std::numeric_limits<double>::infinity();
  for (const ShardDiagnostics& d : r.shards) {
    if (!d.used) continue;
    for (double v : d.rhat) {
      if (std::isfinite(v)) min_rhat = std::min(min_rhat, v);
    }
  }
  const json convergence = {{"all_chains_converged", r.all_converged},
                            {"max_r_hat", r.max_rhat},
                            {"min_r_hat", NumberOrNull(min_rhat)},
                            {"min_ess", r.min_ess},
                            {"acceptance_rate", r.acceptance_rate}};
  WriteFileAtomically(dir / "parameters.json", json{{"timestamp", timestamp},
                                                    {"analysis_mode", r.analysis_mode},
                                                    {"method", "cmc"},
                                                    {"sampling_summary", sampling},
                                                    {"convergence", convergence},
                                                    {"parameters", params},
                                                    {"per_angle", per_angle}}
                                                       .dump(2) +
                                                   "\n");
}

// cmc/analysis_results_cmc.json: quality flag, dataset and the comparison with the NLSQ.
void WriteAnalysisResultsCmc(const std::filesystem::path& dir, const CmcRunResult& r,
                             const std::string& timestamp, const json& sampling) {
  const std::string flag = r.max_rhat < 1.05 ? "good" : r.max_rhat < 1.1 ? "acceptable" : "poor";
  json comparison = json::array();
  for (const NlsqComparison& c : r.nlsq_comparison) {
    comparison.push_back({{"parameter", c.name},
                          {"cmc_mean", c.cmc_mean},
                          {"cmc_std", c.cmc_std},
                          {"nlsq_value", c.nlsq_value},
                          {"nlsq_std", c.nlsq_std},
                          {"z", NumberOrNull(c.z)},
                          {"disagrees", c.disagrees}});
  }
  WriteFileAtomically(
      dir / "analysis_results_cmc.json",
      json{{"method", "cmc"},
           {"timestamp", timestamp},
           {"analysis_mode", r.analysis_mode},
           {"sampling_quality",
            {{"convergence_status", r.all_converged ? "converged" : "not_converged"},
             {"quality_flag", flag}}},
           {"sampling_summary", sampling},
           {"dataset_info",
            {{"n_angles", r.n_angles},
             // homodyne's N²: the frames with t = 0 (the fit grid + 1), as the NLSQ file's.
             {"n_time_points",
              static_cast<std::int64_t>(r.n_time_points + 1) * (r.n_time_points + 1)},
             {"total_data_points", static_cast<std::int64_t>(r.n_angles) * (r.n_time_points + 1) *
                                       (r.n_time_points + 1)},
             {"fitted_pairs", r.n_points},
             {"q_value", r.q}}},
           {"nlsq_comparison", comparison}}
              .dump(2) +
          "\n");
}

// Every shard's diagnostics, one object each (shard_diagnostics.json, diagnostics.json).
json ShardsJson(const CmcRunResult& r) {
  json shards = json::array();
  for (const auto& d : r.shards) {
    json rhat = json::object(), ess = json::object(), bulk = json::object(), tail = json::object();
    for (std::size_t p = 0; p < r.names.size() && p < d.rhat.size(); ++p) {
      rhat[r.names[p]] = NumberOrNull(d.rhat[p]);
      ess[r.names[p]] = NumberOrNull(d.Ess(p));
      bulk[r.names[p]] = NumberOrNull(d.ess_bulk[p]);
      tail[r.names[p]] = NumberOrNull(d.ess_tail[p]);
    }
    shards.push_back(
        {{"shard", d.shard},
         {"points", d.points},
         {"max_r_hat", d.max_rhat},
         {"min_ess", d.min_ess},
         {"divergence_rate", d.divergence_rate},
         {"acceptance_rate", d.acceptance_rate},
         {"sigma_mean", d.noise_sigma_mean},
         {"treedepth_saturation_rate", d.treedepth_saturation_rate},
         {"gradient_evaluations", d.gradient_evaluations},
         {"warmup_gradient_evaluations", d.warmup_gradient_evaluations},
         {"num_warmup", d.num_warmup},
         {"warmup_attempts", d.warmup_attempts},
         {"coordinates", d.coordinates},
         {"coordinates_reason", d.coordinates_reason},
         {"divergences", d.divergences},
         {"treedepth_hits", d.treedepth_hits},
         {"tree_depth_histogram", d.tree_depth_histogram},
         {"step_size_mean", d.step_size_mean},
         {"ess_per_gradient",
          NumberOrNull(d.gradient_evaluations > 0
                           ? d.min_ess / static_cast<double>(d.gradient_evaluations)
                           : std::nan(""))},
         {"sampling_seconds", d.sampling_seconds},
         {"ess_per_second",
          NumberOrNull(d.sampling_seconds > 0.0 ? d.min_ess / d.sampling_seconds : std::nan(""))},
         {"r_hat", rhat},
         {"ess", ess},
         {"ess_bulk", bulk},
         {"ess_tail", tail},
         {"used_in_combination", d.used},
         {"rejection_reason", d.rejection}});
  }
  return shards;
}

// cmc/shard_diagnostics.json and cmc/diagnostics.json.
void WriteDiagnosticsFiles(const std::filesystem::path& dir, const CmcRunResult& r) {
  const json shards = ShardsJson(r);
  json bimodality = json::array();
  for (const BimodalParameter& b : r.bimodality) {
    bimodality.push_back({{"parameter", b.name},
                          {"shards_tested", b.shards_tested},
                          {"bimodal_shards", b.bimodal_shards},
                          {"unconfirmed_shards", b.unconfirmed_shards},
                          {"screened_shards", b.screened_shards},
                          {"lower_mode", b.lower_mode},
                          {"upper_mode", b.upper_mode},
                          {"flagged", b.flagged}});
  }
  json rejected = json::array();
  for (const auto& d : r.shards) {
    if (!d.used) rejected.push_back({{"shard", d.shard}, {"reason", d.rejection}});
  }
  WriteFileAtomically(dir / "shard_diagnostics.json", shards.dump(2) + "\n");
  WriteFileAtomically(dir / "diagnostics.json",
                      DiagnosticsJson(r, shards, rejected, bimodality).dump(2) + "\n");
}

// cmc/samples.h5: the combined draws and every shard's.
void WriteSamplesH5(const std::filesystem::path& dir, const CmcRunResult& r) {
  const std::uint64_t n_draws = r.names.empty() ? 0 : r.draws.size() / r.names.size();
  io::GroupAttributes attrs;
  std::string names;
  for (const auto& n : r.names) names += (names.empty() ? "" : ",") + n;
  attrs.strings.emplace_back("param_names", names);
  std::vector<io::NamedArray> arrays = {
      {"/samples",
       {n_draws, static_cast<std::uint64_t>(r.names.size())},
       r.draws,
       "combined consensus draws (draws x params, constrained space)"}};
  for (std::size_t s = 0; s < r.shard_draws.size(); ++s) {
    arrays.push_back(
        {fmt::format("/shards/shard_{:05d}", s),
         {r.shard_draws[s].size() / r.names.size(), static_cast<std::uint64_t>(r.names.size())},
         r.shard_draws[s],
         "this shard's draws, chains one after the other (constrained space)"});
  }
  io::WriteArraysFile((dir / "samples.h5").string(), arrays, attrs);
}

void WriteSamplesNpz(const std::filesystem::path& dir, const CmcRunResult& r) {
  const std::uint64_t n_draws = r.names.empty() ? 0 : r.draws.size() / r.names.size();
  // cmc/samples.npz: homodyne's arrays. r_hat and ess as diagnostics.json's
  // per_parameter_diagnostics (the worst combined shard; NaN where not measured); no log_prob:
  // the consensus draws are combinations of shards' draws and have no joint log density.
  const WorstShard worst = WorstShardDiagnostics(r);
  std::vector<double> ess = worst.ess;
  for (double& e : ess) e = std::isfinite(e) ? e : std::nan("");
  const std::uint64_t n_names = r.names.size();
  NpzArchive npz(dir / "samples.npz");
  npz.AddDoubles("samples", {n_draws, n_names}, r.draws);
  npz.AddStrings("param_names", r.names);
  npz.AddDoubles("r_hat", {n_names}, worst.rhat);
  npz.AddDoubles("ess", {n_names}, ess);
  npz.AddDoubles("acceptance_rate", {1}, std::vector<double>{r.acceptance_rate});
  npz.Commit();
}

}  // namespace

void WriteCmcResultFiles(const std::string& output_dir, const CmcRunResult& r) {
  const std::filesystem::path dir = std::filesystem::path(output_dir) / "cmc";
  EnsureDirectory(dir);
  const std::string timestamp = IsoTimestampNow();
  const json sampling = SamplingSummaryJson(r);
  WriteCmcParametersJson(dir, r, timestamp, sampling);
  WriteAnalysisResultsCmc(dir, r, timestamp, sampling);
  WriteDiagnosticsFiles(dir, r);
  WriteSamplesH5(dir, r);
  WriteSamplesNpz(dir, r);
}

std::string CmcHomodyneResultsJson(const CmcRunResult& r) {
  using nlohmann::json;
  // homodyne's summary of a CMC result: the posterior means of the sampled parameters, in
  // the samples' order (the columns of samples.npz).
  const std::size_t n_names = r.names.size();
  const std::size_t n_draws = n_names == 0 ? 0 : r.draws.size() / n_names;
  std::vector<double> means(n_names, 0.0);
  for (std::size_t j = 0; j < n_draws; ++j) {
    for (std::size_t p = 0; p < n_names; ++p) means[p] += r.draws[j * n_names + p];
  }
  for (double& m : means) m = n_draws > 0 ? m / static_cast<double>(n_draws) : std::nan("");
  json parameters = json::array();
  for (double m : means) parameters.push_back(NumberOrNull(m));
  const json j = {{"method", "cmc"},
                  {"analysis_mode", r.analysis_mode},
                  {"success", r.shards_used > 0},
                  {"optimization_time", r.seconds},
                  {"device_config", {{"platform", "cpu"}}},
                  {"parameters", parameters},
                  {"parameter_names", r.names},
                  {"diagnostics", {{"converged", r.all_converged}}}};
  return j.dump(2) + "\n";
}

void WriteCmcHomodyneResults(const std::filesystem::path& output_dir, const CmcRunResult& r) {
  WriteFileAtomically(output_dir / "homodyne_results.json", CmcHomodyneResultsJson(r));
}

}  // namespace homodyne::outputs
