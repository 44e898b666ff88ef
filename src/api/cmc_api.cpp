// homodyne/cmc.h: the public options become the typed config the YAML reader also builds
// (config::Config, resolved by the same ResolveParameters), the in-memory data an
// io::DatasetView (no copy of the matrices), and the sampling is the one `homodyne --method cmc`
// runs (cmc::RunCmcFit), its result broadcast from rank 0.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cmc/cmc_checkpoint.h"
#include "cmc/cmc_fit.h"
#include "config/config.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "core/log.h"
#include "homodyne/cmc.h"
#include "io/dataset.h"
#include "model/analysis_mode.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"
#include "translate.h"

namespace homodyne {
namespace {

// The config a YAML file of the same sampling would give: the defaults of config::Config,
// the options on top (optimization.cmc.*, initial_parameters, parameter_space.bounds).
config::Config ToConfig(const CmcOptions& o, const XpcsDataView& data) {
  config::Config c = config::DefaultConfig();
  api::ApplyModelSettings(c, o.mode, o.stator_rotor_gap, o.parameters, data, "CmcOptions");
  config::CmcOptions& cmc = c.optimization.cmc;
  cmc.per_angle_mode = api::ToPerAngleMode(o.per_angle);
  cmc.seed = o.seed;
  if (o.shards > 0) cmc.sharding.num_shards = o.shards;
  cmc.per_shard_mcmc.num_chains = o.chains;
  cmc.per_shard_mcmc.num_warmup = o.warmup;
  cmc.per_shard_mcmc.num_samples = o.draws;
  cmc.per_shard_mcmc.target_accept_prob = o.target_accept;
  cmc.per_shard_mcmc.max_tree_depth = o.max_tree_depth;
  cmc.validation.use_nlsq_informed_priors = !o.nlsq_informed_priors   ? config::AutoSwitch::kAuto
                                            : *o.nlsq_informed_priors ? config::AutoSwitch::kTrue
                                                                      : config::AutoSwitch::kFalse;
  cmc.known_sigma = o.known_sigma;
  config::ResolveParameters(c);
  return c;
}

// The NLSQ answer as the CMC warm start reads it: the physics with their uncertainties and,
// when it has one contrast/offset per angle, the whole expanded vector.
nlsq::NlsqRunResult WarmStart(const NlsqSummary& s) {
  nlsq::NlsqRunResult r;
  for (const ParameterEstimate& p : s.physical) {
    r.report.physical_names.push_back(p.name);
    r.report.physical_values.push_back(p.value);
    r.report.physical_uncertainties.push_back(p.uncertainty);
  }
  if (!s.contrast.empty() && s.contrast.size() == s.offset.size()) {
    for (const ParameterEstimate& p : s.contrast) r.expanded.push_back(p.value);
    for (const ParameterEstimate& p : s.offset) r.expanded.push_back(p.value);
    r.expanded.insert(r.expanded.end(), r.report.physical_values.begin(),
                      r.report.physical_values.end());
  }
  return r;
}

}  // namespace

void CmcOptions::Validate() const {
  const std::string src = "CmcOptions";
  api::ValidateParameterSettings(mode, parameters, src);
  if (!(stator_rotor_gap > 0.0) || !std::isfinite(stator_rotor_gap)) {
    ThrowBadInput(fmt::format("expected a positive gap [Å], found {}", stator_rotor_gap), src,
                  "stator_rotor_gap");
  }
  if (per_angle == PerAngleScaling::kFourier) {
    ThrowBadInput("fourier is not available for sampling: use auto, individual or constant", src,
                  "per_angle");
  }
  if (shards < 0) ThrowBadInput(fmt::format("expected ≥ 0, found {}", shards), src, "shards");
  if (chains < 1) ThrowBadInput(fmt::format("expected ≥ 1, found {}", chains), src, "chains");
  if (warmup < 0) ThrowBadInput(fmt::format("expected ≥ 0, found {}", warmup), src, "warmup");
  if (draws < 1) ThrowBadInput(fmt::format("expected ≥ 1, found {}", draws), src, "draws");
  if (seed < 0) ThrowBadInput(fmt::format("expected ≥ 0, found {}", seed), src, "seed");
  if (!(target_accept > 0.0 && target_accept < 1.0)) {
    ThrowBadInput(fmt::format("expected a value in (0, 1), found {}", target_accept), src,
                  "target_accept");
  }
  if (max_tree_depth < 1 || max_tree_depth > 30) {
    ThrowBadInput(fmt::format("expected 1…30, found {}", max_tree_depth), src, "max_tree_depth");
  }
  if (threads < 1) ThrowBadInput(fmt::format("expected ≥ 1, found {}", threads), src, "threads");
  if (known_sigma && !(*known_sigma > 0.0 && std::isfinite(*known_sigma))) {
    ThrowBadInput(fmt::format("expected a finite value > 0 or no value, found {}", *known_sigma),
                  src, "known_sigma");
  }
  if (warm_start) {
    const std::vector<std::string> names = model::PhysicalParameterNames(mode);
    std::vector<std::string> given;
    for (const ParameterEstimate& p : warm_start->physical) given.push_back(p.name);
    if (given != names) {
      ThrowBadInput(
          fmt::format("the NLSQ answer has parameters [{}], {} needs [{}]", fmt::join(given, ", "),
                      model::ToString(mode), fmt::join(names, ", ")),
          src, "warm_start");
    }
  }
}

std::string_view ToString(CmcStatus status) {
  switch (status) {
    case CmcStatus::kConverged:
      return "converged";
    case CmcStatus::kNotConverged:
      return "not_converged";
    case CmcStatus::kUnchecked:
      break;
  }
  return "unchecked";
}

std::string CmcSummary::BriefReport() const {
  return fmt::format(
      "CMC {}: max R-hat {:.3f}, min ESS {:.0f}, {}/{} shard(s) used, {} chain(s) x ({} warmup + "
      "{} draws), {:.2f} s on {} rank(s) x {} thread(s)\n",
      ToString(status), max_rhat, min_ess, shards_used, shards.size(), chains, warmup, draws,
      seconds, ranks, threads_per_rank);
}

std::string CmcSummary::FullReport() const {
  std::string out = BriefReport();
  out += fmt::format("per-angle scaling: {}\nposterior mean ± std:\n", ToString(per_angle_scaling));
  for (const PosteriorEstimate& p : physical) {
    out += fmt::format("  {:<20} {:>14.6g} ± {:.3g}\n", p.name, p.mean, p.std);
  }
  for (std::size_t k = 0; k < phi_deg.size() && k < contrast.size() && k < offset.size(); ++k) {
    out +=
        fmt::format("  phi {:>8.3f}: contrast {:.6g} ± {:.3g}, offset {:.6g} ± {:.3g}\n",
                    phi_deg[k], contrast[k].mean, contrast[k].std, offset[k].mean, offset[k].std);
  }
  for (const CmcShardSummary& d : shards) {
    out += fmt::format(
        "  shard {:>4}: {:>8} points  R-hat {:.3f}  min ESS {:>7.0f}  divergences {:.1f}%  "
        "accept {:.2f}{}\n",
        d.shard, d.points, d.max_rhat, d.min_ess, 100.0 * d.divergence_rate, d.acceptance_rate,
        d.used ? "" : "  rejected: " + d.rejection);
  }
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  return out;
}

CmcSummary FitCmc(MPI_Comm comm, const XpcsData& data, const CmcOptions& options) {
  options.Validate();
  api::CheckData(data);
  return FitCmc(comm, ViewOf(data), options);
}

CmcSummary FitCmc(MPI_Comm comm, const XpcsDataView& data, const CmcOptions& options) {
  options.Validate();
  api::CheckData(data);
  const Comm c(comm);
  const io::DatasetView dataset = api::ToDatasetView(data);
  const config::Config cfg = ToConfig(options, data);
  nlsq::NlsqRunResult warm;
  cmc::CmcRunOptions run;
  run.in_memory = &dataset;
  if (options.warm_start) {
    warm = WarmStart(*options.warm_start);
    run.warm_start = &warm;
  }
  run.threads = options.threads;
  run.print_progress = options.print_progress;
  if (options.stop_on_request) {
    const checkpoint::CheckpointSettings s = api::StopSettings(c, cfg, options.stop_directory);
    checkpoint::CmcCheckpointSettings cs;
    cs.enabled = false;
    cs.stop_on_signal = true;
    cs.dir = s.dir;
    cs.config_description = s.config_description;
    run.checkpoints = cs;
  }
  const Logger logger(c.rank(), options.print_progress ? LogLevel::kInfo : LogLevel::kError);
  cmc::CmcRunResult r = cmc::RunCmcFit(c, cfg, run, logger);
  cmc::BroadcastCmcResult(c, r);
  return api::ToCmcSummary(r, data.phi_deg, c.size(), options.threads);
}

}  // namespace homodyne
