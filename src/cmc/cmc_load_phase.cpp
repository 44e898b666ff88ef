#include "cmc/cmc_phases.h"
#include "config/choices.h"

namespace homodyne::cmc::phases {

// ---------------------------------------------------------------------------------------
// Phase 1: the data, complete on every rank (a shard takes rows from the whole matrix).

CmcData LoadData(const Comm& world, const config::Config& cfg, const CmcRunOptions& options,
                 const Logger& logger) {
  CmcData d;
  if (options.in_memory != nullptr) {
    d.borrowed = options.in_memory;
  } else {
    d.loaded = RunCollectively(world, [&] {
      return io::LoadDataset(LoadOptionsFromConfig(cfg, options.data_file),
                             world.is_root() ? logger : Logger::Silent());
    });
  }
  const io::DatasetMetadata& meta = d.meta();
  d.nf = meta.n_frames;
  d.n_phi = static_cast<int>(meta.n_angles());
  if (d.nf < 3) {
    RunCollectively(world, [&] {
      ThrowBadInput(fmt::format("{} frame(s) selected; CMC needs at least 3", d.nf), meta.file,
                    config::keys::FrameWindowKey());
    });
  }
  d.n_points = static_cast<std::int64_t>(d.n_phi) * (d.nf - 1) * (d.nf - 2) / 2;
  d.phi = meta.phi_values();
  d.t_fit.assign(meta.t.begin() + 1, meta.t.end());
  d.geometry = GeometryFromConfig(cfg, meta.q_physics);
  return d;
}

// ---------------------------------------------------------------------------------------
// Phase 2: the sampled parameters (per-angle layout), their bounds and starting point
// (identical on every rank: same data, same rules).

std::string PerAngleModeKey() { return config::keys::Key(config::keys::kCmc, "per_angle_mode"); }

model::ScalingLayout CmcLayout(const config::Config& cfg, int n_phi) {
  const auto& c = cfg.optimization.cmc;
  switch (c.per_angle_mode) {
    case model::PerAngleMode::kIndividual:
      return model::ScalingLayout::kIndividual;
    case model::PerAngleMode::kConstant:
      return model::ScalingLayout::kFixedConstant;
    case model::PerAngleMode::kConstantAveraged:
      return model::ScalingLayout::kConstantAveraged;
    case model::PerAngleMode::kAuto:
      return n_phi >= c.constant_scaling_threshold ? model::ScalingLayout::kAveraged
                                                   : model::ScalingLayout::kIndividual;
    case model::PerAngleMode::kFourier:
      break;
  }
  ThrowBadInput(fmt::format("per_angle_mode '{}' is not available for CMC: use auto, individual, "
                            "constant or constant_averaged",
                            config::ChoiceName(c.per_angle_mode)),
                cfg.source, PerAngleModeKey());
}

SampledParameters ResolveSampledParameters(const config::Config& cfg, const CmcData& d) {
  const model::AnalysisMode mode = cfg.analysis_mode;
  const model::ScalingLayout resolved = CmcLayout(cfg, d.n_phi);
  const model::ScalingBounds sb{cfg.contrast.min, cfg.contrast.max, cfg.offset.min, cfg.offset.max};
  const std::vector<double>& t = d.meta().t;
  std::vector<model::ScalingEstimate> estimates;
  for (int k = 0; k < d.n_phi; ++k) {
    std::vector<double> lags, values;
    for (std::int64_t i = 1; i < d.nf; ++i) {
      for (std::int64_t j = 1; j < d.nf; ++j) {
        lags.push_back(std::abs(t[static_cast<std::size_t>(i)] - t[static_cast<std::size_t>(j)]));
        values.push_back(d.at(k, i, j));
      }
    }
    estimates.push_back(model::EstimateScaling(lags, values, sb));
  }
  // Held physics sit where the NLSQ holds them (its start rule), so `--method both` samples
  // the posterior of the model the NLSQ fitted.
  const model::ExpandedIndex index(mode, d.n_phi);
  const ExpandedStart start =
      ExpandedStartFromConfig(cfg, mode, estimates, {}, UnsetStart::kNlsqDefault);
  const HeldPhysics held = HeldPhysicsFromConfig(cfg, index, start.values);
  return {resolved,
          model::ParameterLayout::Create(resolved, mode, d.phi, estimates)
              .WithHeldPhysics(held.vary, held.values),
          index, std::move(estimates)};
}

// The config's start, or the NLSQ warm start: its whole expanded vector when it matches
// these data, else its physics.
StartingPoint WarmStart(const Comm& world, const config::Config& cfg, const SampledParameters& sp,
                        const nlsq::NlsqRunResult* warm) {
  const model::AnalysisMode mode = cfg.analysis_mode;
  const model::ExpandedIndex& index = sp.index;
  const ExpandedStart start =
      RunCollectively(world, [&] { return ExpandedStartFromConfig(cfg, mode, sp.estimates); });
  std::vector<double> expanded0 = start.values;
  StartingPoint s;
  if (warm != nullptr && static_cast<int>(warm->report.physical_values.size()) == index.n_phys) {
    s.warm_physics = warm;
  }
  if (warm != nullptr && static_cast<int>(warm->expanded.size()) == index.size()) {
    expanded0 = warm->expanded;
  } else if (s.warm_physics != nullptr) {
    for (int p = 0; p < index.n_phys; ++p) {
      expanded0[static_cast<std::size_t>(index.phys(p))] =
          warm->report.physical_values[static_cast<std::size_t>(p)];
    }
  } else if (warm != nullptr) {
    RunCollectively(world, [&] {
      ThrowBadInput(
          fmt::format("the NLSQ warm start has {} physical parameters, {} mode needs {}",
                      warm->report.physical_values.size(), model::ToString(mode), index.n_phys),
          {}, "--nlsq-result");
    });
  }
  s.bounds = sp.layout.OptimiserBounds(start.bounds);
  s.theta0 = sp.layout.FromExpanded(expanded0);
  for (std::size_t k = 0; k < s.theta0.size(); ++k) {  // strictly inside for the logistic map
    const double w = s.bounds.upper[k] - s.bounds.lower[k];
    s.theta0[k] =
        std::clamp(s.theta0[k], s.bounds.lower[k] + 1e-6 * w, s.bounds.upper[k] - 1e-6 * w);
  }
  return s;
}

}  // namespace homodyne::cmc::phases
