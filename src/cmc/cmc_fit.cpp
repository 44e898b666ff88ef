#include "cmc/cmc_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "cmc/bounded_transform.h"
#include "cmc/cmc_phases.h"
#include "cmc/consensus.h"
#include "cmc/mode_aware.h"
#include "cmc/reparameterization.h"
#include "cmc/shard_chains.h"
#include "cmc/shard_filter.h"
#include "cmc/shard_posterior.h"
#include "cmc/sharding.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "config/key_paths.h"
#include "config/parameters.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "core/progress.h"
#include "io/content_digest.h"
#include "io/dataset.h"
#include "nlsq/fit_report.h"
#include "nuts/diagnostics.h"
#include "nuts/nuts_chain.h"
#include "nuts/run_sampler.h"
#include "parallel/collective.h"

namespace homodyne::cmc {

using namespace phases;  // NOLINT(build/namespaces): the driver reads as its phases

CmcRunResult RunCmcFit(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                       const Logger& logger) {
  const auto t_start = std::chrono::steady_clock::now();
  Progress progress(logger, "CMC");
  const model::AnalysisMode mode = cfg.analysis_mode;
  const CmcData data = LoadData(world, cfg, options, logger);
  SampledParameters params = ResolveSampledParameters(cfg, data);
  if (params.size() == 0) {
    RunCollectively(world, [&] {
      ThrowBadInput(fmt::format("nothing to sample: every physical parameter is held and the {} "
                                "per-angle layout samples no scaling",
                                model::ToString(params.resolved)),
                    cfg.source,
                    config::keys::Key(config::keys::kInitialParameters, "fixed_parameters"));
    });
  }
  StartingPoint start = WarmStart(world, cfg, params, options.warm_start);
  const std::vector<std::string> held_notes = HoldUnidentified(cfg, params, start);
  for (const std::string& note : held_notes) logger.Info("{}", note);
  const SamplerSettings sampler = SamplerFromConfig(world, cfg, options);
  const Shards shards = PlanShards(world, cfg, options, data, params.size(), sampler);
  logger.Info(
      "CMC: {} shard(s) of ~{} points, {} chain(s) × ({} warmup + {} draws), layout {}, {} sampled "
      "parameters + {}",
      shards.count, data.n_points / shards.count, sampler.chains, sampler.nuts.num_warmup,
      sampler.nuts.num_samples, model::ToString(params.resolved), params.size(),
      cfg.optimization.cmc.known_sigma
          ? fmt::format("sigma fixed at {:.6g}", *cfg.optimization.cmc.known_sigma)
          : std::string("sigma"));
  const SamplingSites sites = BuildSamplingSites(cfg, data, params, start, shards.temper, logger);

  const std::vector<LocalShardResult> local =
      SampleLocalShards({world, cfg, options, data, params, start, sampler, shards, sites, logger},
                        progress, t_start);
  GatheredShards gathered =
      GatherShards(world, local, shards.count, params.size(),
                   UnwhitenedAxisNames(sites, params.names(), !cfg.optimization.cmc.known_sigma));

  CmcRunResult result = ResultOfSettings(mode, params, sampler, shards);
  result.n_angles = data.n_phi;
  result.n_time_points = static_cast<int>(data.t_fit.size());
  result.n_points = data.n_points;
  result.q = data.meta().q_physics;
  result.known_sigma = cfg.optimization.cmc.known_sigma.value_or(0.0);
  result.sampled_coordinates = SampledCoordinates(cfg, sites);
  result.rhat_threshold = cfg.optimization.cmc.validation.max_per_shard_rhat;
  result.ess_threshold = cfg.optimization.cmc.validation.min_per_shard_ess;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    result.shards = std::move(gathered.diagnostics);
    const std::vector<ShardDraws> theta_draws =
        ShardDrawsInModelSpace(gathered.draws, sites, params.size(), result);
    const std::vector<ShardDraws> kept =
        FilterPhase(cfg, params, start, std::move(gathered), theta_draws, result, logger);
    BimodalityPhase(cfg, params, theta_draws, result, logger);
    CombinePhase(kept, theta_draws, sites, start, params.size(), ConsensusShapeOf(cfg), result,
                 logger);
    Summarise(mode, params, result);
    result.warnings.insert(result.warnings.begin(), held_notes.begin(), held_notes.end());
    CompareWithNlsqPhase(start.warm_physics, result, logger);
  });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  progress.Done(fmt::format("{} shard(s) × {} chain(s) in {:.1f} s", shards.count, sampler.chains,
                            result.seconds));
  if (world.is_root()) LogShards(result, logger);
  return result;
}

std::vector<NlsqComparison> CompareWithNlsq(const nlsq::FitReport& nlsq,
                                            const std::vector<ParameterSummary>& posterior) {
  std::vector<NlsqComparison> out;
  for (std::size_t p = 0; p < nlsq.physical_names.size(); ++p) {
    const auto it =
        std::find_if(posterior.begin(), posterior.end(),
                     [&](const ParameterSummary& s) { return s.name == nlsq.physical_names[p]; });
    if (it == posterior.end()) continue;  // not sampled (fixed)
    NlsqComparison c;
    c.name = it->name;
    c.cmc_mean = it->mean;
    c.cmc_std = it->std;
    c.nlsq_value = nlsq.physical_values[p];
    c.nlsq_std = p < nlsq.physical_uncertainties.size() ? nlsq.physical_uncertainties[p] : 0.0;
    const double scale = std::sqrt(c.cmc_std * c.cmc_std + c.nlsq_std * c.nlsq_std);
    const double gap = std::abs(c.cmc_mean - c.nlsq_value);
    c.z = scale > 0.0 ? gap / scale : (gap > 0.0 ? HUGE_VAL : 0.0);
    c.disagrees = !(c.z <= kNlsqDisagreementZ);  // NaN counts as disagreeing
    out.push_back(c);
  }
  return out;
}

}  // namespace homodyne::cmc
