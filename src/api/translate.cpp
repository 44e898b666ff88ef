#include "translate.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_digest.h"
#include "config/parameters.h"
#include "core/errors.h"
#include "io/selection.h"
#include "model/analysis_mode.h"
#include "parallel/broadcast.h"

namespace homodyne::api {

void CheckData(const XpcsData& data) {
  const std::string& src = data.source;
  if (data.c2.empty()) ThrowBadInput("no angles", src, "c2");
  const auto n = static_cast<std::size_t>(data.n_frames());
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    if (data.c2[k].size() != n * n) {
      ThrowBadInput(
          fmt::format("matrix {} has {} values, expected {} × {}", k, data.c2[k].size(), n, n), src,
          "c2");
    }
  }
  CheckData(ViewOf(data));
}

void CheckData(const XpcsDataView& data) {
  const std::string& src = data.source;
  if (data.c2.empty()) ThrowBadInput("no angles", src, "c2");
  if (data.phi_deg.size() != data.c2.size()) {
    ThrowBadInput(fmt::format("{} angles for {} matrices", data.phi_deg.size(), data.c2.size()),
                  src, "phi_deg");
  }
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    if (data.c2[k] == nullptr) ThrowBadInput(fmt::format("matrix {} is missing", k), src, "c2");
  }
  const int n = data.n_frames;
  if (n < 3) ThrowBadInput(fmt::format("{} frame(s); a fit needs at least 3", n), src, "c2");
  if (!(data.q > 0.0) || !std::isfinite(data.q)) {
    ThrowBadInput(fmt::format("expected a positive q, found {}", data.q), src, "q");
  }
  if (!(data.dt > 0.0) || !std::isfinite(data.dt)) {
    ThrowBadInput(fmt::format("expected a positive dt, found {}", data.dt), src, "dt");
  }
}

io::DatasetView ToDatasetView(const XpcsDataView& data) {
  io::DatasetView ds;
  io::DatasetMetadata& m = ds.meta;
  const auto n = static_cast<std::int64_t>(data.n_frames);
  m.file = data.source.empty() ? std::string("(in memory)") : data.source;
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    m.bins.push_back({static_cast<std::int64_t>(k), fmt::format("c2[{}]", k), data.q,
                      data.phi_deg[k], io::NormalizePhi(data.phi_deg[k])});
  }
  m.loader_bin_count = data.c2.size();
  m.q_physics = data.q;
  m.file_frames = n;
  m.n_frames = n;
  m.start_frame = 1;
  m.end_frame = n;
  m.dt = data.dt;
  m.t = io::LoaderTimeGrid(data.dt, n);
  ds.c2 = data.c2;
  return ds;
}

model::PerAngleMode ToPerAngleMode(PerAngleScaling scaling) {
  switch (scaling) {
    case PerAngleScaling::kIndividual:
      return model::PerAngleMode::kIndividual;
    case PerAngleScaling::kConstant:
      return model::PerAngleMode::kConstant;
    case PerAngleScaling::kFourier:
      return model::PerAngleMode::kFourier;
    case PerAngleScaling::kAuto:
      break;
  }
  return model::PerAngleMode::kAuto;
}

model::ScalingLayout ToModelLayout(ScalingLayout layout) {
  switch (layout) {
    case ScalingLayout::kIndividual:
      return model::ScalingLayout::kIndividual;
    case ScalingLayout::kAveraged:
      return model::ScalingLayout::kAveraged;
    case ScalingLayout::kFixedConstant:
      return model::ScalingLayout::kFixedConstant;
    case ScalingLayout::kConstantAveraged:
      return model::ScalingLayout::kConstantAveraged;
    case ScalingLayout::kFourier:
      break;
  }
  return model::ScalingLayout::kFourier;
}

ScalingLayout ParseScalingLayout(const std::string& text) {
  for (const ScalingLayout layout :
       {ScalingLayout::kIndividual, ScalingLayout::kAveraged, ScalingLayout::kFixedConstant,
        ScalingLayout::kConstantAveraged, ScalingLayout::kFourier}) {
    if (text == ToString(layout)) return layout;
  }
  ThrowInternal(fmt::format("unknown per-angle scaling layout '{}'", text));
}

CmcStatus CmcStatusOf(const std::vector<cmc::ShardDiagnostics>& shards, double rhat_threshold,
                      double ess_threshold) {
  bool unknown = shards.empty();
  for (const cmc::ShardDiagnostics& d : shards) {
    if (!d.Converged(rhat_threshold, ess_threshold)) return CmcStatus::kNotConverged;
    unknown = unknown || !std::isfinite(d.max_rhat);
  }
  return unknown ? CmcStatus::kUnchecked : CmcStatus::kConverged;
}

FitQuality ParseFitQuality(const std::string& text) {
  if (text.empty()) return FitQuality::kNotAssessed;
  for (const FitQuality quality : {FitQuality::kGood, FitQuality::kAcceptable, FitQuality::kPoor}) {
    if (text == ToString(quality)) return quality;
  }
  ThrowInternal(fmt::format("unknown fit quality '{}'", text));
}

void ValidateParameterSettings(AnalysisMode mode, const std::vector<ParameterSetting>& settings,
                               const std::string& source) {
  for (const ParameterSetting& s : settings) {
    const std::string name = model::CanonicalParameterName(s.name);
    const std::string key = "parameters[" + s.name + "]";
    if (name != "contrast" && name != "offset" && model::PhysicalParameterIndex(mode, name) < 0) {
      ThrowBadInput(fmt::format("'{}' is not a parameter of {} (expected one of {}, contrast, "
                                "offset)",
                                s.name, model::ToString(mode),
                                fmt::join(model::PhysicalParameterNames(mode), ", ")),
                    source, key);
    }
    if (s.fixed && (name == "contrast" || name == "offset")) {
      ThrowBadInput("only physical parameters can be held fixed", source, key);
    }
    if (s.fixed && !s.initial) {
      ThrowBadInput("a fixed parameter needs the value it is held at: set initial", source, key);
    }
    for (const auto& v : {s.initial, s.min, s.max}) {
      if (v && !std::isfinite(*v)) ThrowBadInput("values must be finite", source, key);
    }
    const auto def = config::DefaultParameterBounds(name);
    if (s.min.value_or(def->min) >= s.max.value_or(def->max)) {
      ThrowBadInput(fmt::format("min {} is not below max {}", s.min.value_or(def->min),
                                s.max.value_or(def->max)),
                    source, key);
    }
  }
}

void ApplyModelSettings(config::Config& c, AnalysisMode mode, double stator_rotor_gap,
                        const std::vector<ParameterSetting>& settings, const XpcsDataView& data,
                        const std::string& source) {
  const auto n_angles = data.c2.size();
  c.source = source;
  c.analysis_mode = mode;
  c.analysis_mode_name = std::string(model::ToString(mode));
  c.analyzer.dt = data.dt;
  c.analyzer.dt_source = "XpcsData::dt";
  c.analyzer.wavevector_q = data.q;
  c.analyzer.stator_rotor_gap = stator_rotor_gap;
  c.analyzer.stator_rotor_gap_source = source + "::stator_rotor_gap";
  config::InitialParameters& ip = c.initial_parameters;
  std::vector<double> values;
  for (const ParameterSetting& s : settings) {
    const std::string name = model::CanonicalParameterName(s.name);
    const bool scaling = name == "contrast" || name == "offset";
    if (s.min || s.max) {
      const auto def = config::DefaultParameterBounds(name);
      c.parameter_space.bounds.push_back(
          {name, s.min.value_or(def->min), s.max.value_or(def->max)});
    }
    if (!s.initial) continue;
    if (scaling) {
      (name == "contrast" ? ip.contrast : ip.offset) = std::vector<double>(n_angles, *s.initial);
    } else {
      ip.parameter_names.push_back(name);
      values.push_back(*s.initial);
      if (s.fixed) ip.fixed_parameters[name] = *s.initial;
    }
  }
  if (!values.empty()) ip.values = values;
}

NlsqSummary ToNlsqSummary(const nlsq::NlsqRunResult& r) {
  const auto estimate = [](const std::string& name, double value, double uncertainty,
                           bool held = false) {
    return ParameterEstimate{name, value, uncertainty, held};
  };
  NlsqSummary s;
  const nlsq::FitReport& rep = r.report;
  // The solver's termination, as Finish turns it into convergence_status.
  switch (r.summary.termination) {
    case lsq::Termination::kConverged:
      s.status = NlsqStatus::kConverged;
      break;
    case lsq::Termination::kStalled:
      s.status = NlsqStatus::kStalled;
      break;
    case lsq::Termination::kMaxIterations:
      s.status = NlsqStatus::kMaxIterations;
      break;
    case lsq::Termination::kNumericalFailure:
    case lsq::Termination::kFailure:
      s.status = NlsqStatus::kFailed;
      break;
  }
  s.solver_message = r.summary.message;
  s.iterations = rep.iterations;
  s.chi2 = rep.chi_squared;
  s.reduced_chi2 = rep.reduced_chi_squared;
  s.noise_reduced_chi2 = rep.noise_reduced_chi_squared;
  s.misfit_reasons = rep.misfit_reasons;
  s.points = r.unique_pairs;
  for (std::size_t p = 0; p < rep.physical_names.size(); ++p) {
    s.physical.push_back(estimate(rep.physical_names[p], rep.physical_values[p],
                                  rep.physical_uncertainties[p], rep.IsHeld(p)));
  }
  s.phi_deg = rep.phi_deg;
  for (std::size_t k = 0; k < rep.contrast.size(); ++k) {
    s.contrast.push_back(
        estimate(fmt::format("contrast_{}", k), rep.contrast[k], rep.contrast_uncertainty[k]));
    s.offset.push_back(
        estimate(fmt::format("offset_{}", k), rep.offset[k], rep.offset_uncertainty[k]));
  }
  s.per_angle_scaling = ParseScalingLayout(rep.per_angle_mode);
  s.quality = ParseFitQuality(rep.quality_flag);
  s.warnings = rep.quality_warnings;
  s.warnings.insert(s.warnings.end(), rep.degeneracy.warnings.begin(),
                    rep.degeneracy.warnings.end());
  s.recovery_actions = rep.recovery_actions;
  s.ranks = rep.mpi_ranks;
  s.threads_per_rank = rep.threads_per_rank;
  s.seconds = rep.execution_time;
  return s;
}

CmcSummary ToCmcSummary(const cmc::CmcRunResult& r, const std::vector<double>& phi_deg, int ranks,
                        int threads) {
  CmcSummary s;
  const std::size_t n_phi = phi_deg.size();
  // The expanded parameters: [contrast_k…, offset_k…, physics].
  for (std::size_t e = 0; e < r.parameters.size(); ++e) {
    const PosteriorEstimate p{r.parameters[e].name, r.parameters[e].mean, r.parameters[e].std,
                              r.parameters[e].held};
    (e < n_phi ? s.contrast : e < 2 * n_phi ? s.offset : s.physical).push_back(p);
  }
  s.phi_deg = phi_deg;
  s.per_angle_scaling = ParseScalingLayout(r.per_angle_mode);
  for (const cmc::ShardDiagnostics& d : r.shards) {
    s.shards.push_back({d.shard, d.points, d.max_rhat, d.min_ess, d.divergence_rate,
                        d.acceptance_rate, d.used, d.rejection});
  }
  s.shards_used = r.shards_used;
  s.status = CmcStatusOf(r.shards, r.rhat_threshold, r.ess_threshold);
  s.max_rhat = r.max_rhat;
  s.min_ess = r.min_ess;
  s.chains = r.num_chains;
  s.warmup = r.num_warmup;
  s.draws = r.num_samples;
  s.warnings = r.warnings;
  s.ranks = ranks;
  s.threads_per_rank = threads;
  s.seconds = r.seconds;
  return s;
}

checkpoint::CheckpointSettings StopSettings(const Comm& comm, const config::Config& cfg,
                                            const std::string& dir) {
  std::string where = dir;
  if (where.empty() && comm.rank() == 0) {
    where = (std::filesystem::temp_directory_path() / fmt::format("homodyne-stop-{}", ::getpid()))
                .string();
  }
  Broadcast(comm, where);
  checkpoint::CheckpointSettings s;
  s.enabled = false;  // no periodic checkpoints: only the state at a stop request
  s.stop_on_signal = true;
  s.dir = where;
  s.config_description = config::DescribeConfig(cfg, {});
  return s;
}

}  // namespace homodyne::api
