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

// An eigenvalue of the equilibrated JᵀJ this far below its largest is rounding: the data
// do not see the direction (the exact degeneracies give 0 to 1e-16).
constexpr double kUnseenEigenvalue = 1e-12;

namespace {

// Holds the physical parameters with vary[p] false at physics[p]: the layout drops them and
// the starting point loses their columns (physics last, in physical order; see
// WithHeldPhysics).
void ApplyHolds(const std::vector<bool>& vary, const std::vector<double>& physics,
                SampledParameters& sp, StartingPoint& s) {
  const model::ParameterLayout& layout = sp.layout;
  std::vector<std::size_t> keep;
  const int first = sp.first_physical();
  for (int c = 0; c < first; ++c) keep.push_back(static_cast<std::size_t>(c));
  for (int p = 0, col = first; p < sp.index.n_phys; ++p) {
    if (!layout.PhysicalVaries(p)) continue;
    if (vary[static_cast<std::size_t>(p)]) keep.push_back(static_cast<std::size_t>(col));
    ++col;
  }
  sp.layout = layout.WithHeldPhysics(vary, physics);
  StartingPoint out = s;
  out.theta0.clear();
  out.bounds.lower.clear();
  out.bounds.upper.clear();
  for (std::size_t c : keep) {
    out.theta0.push_back(s.theta0[c]);
    out.bounds.lower.push_back(s.bounds.lower[c]);
    out.bounds.upper.push_back(s.bounds.upper[c]);
  }
  s = std::move(out);
}

}  // namespace

std::vector<std::string> HoldUnidentified(const config::Config& cfg, SampledParameters& sp,
                                          StartingPoint& s) {
  std::vector<std::string> notes;
  const model::AnalysisMode mode = cfg.analysis_mode;
  if (mode != model::AnalysisMode::kTwoComponent) return notes;
  const std::vector<std::string>& names = model::PhysicalParameterNames(mode);
  const auto phys = [&](std::string_view name) {
    return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  const int f0 = phys("f0"), f1 = phys("f1"), f2 = phys("f2");
  const model::ParameterLayout& layout = sp.layout;
  const std::vector<double> expanded = layout.Expand(s.theta0);
  const auto value = [&](int p) { return expanded[static_cast<std::size_t>(sp.index.phys(p))]; };
  const bool f1_held_at_zero = !layout.PhysicalVaries(f1) && value(f1) == 0.0;
  std::vector<bool> vary(static_cast<std::size_t>(sp.index.n_phys));
  for (int p = 0; p < sp.index.n_phys; ++p)
    vary[static_cast<std::size_t>(p)] = layout.PhysicalVaries(p);
  const auto hold = [&](int p, std::string_view why) {
    vary[static_cast<std::size_t>(p)] = false;
    notes.push_back(fmt::format(
        "CMC: {} held at its start {:.6g}, not sampled: {}; the data do not tell it apart, "
        "so only its prior would describe it (fixed_parameters chooses the value)",
        names[static_cast<std::size_t>(p)], value(p), why));
  };
  if (layout.PhysicalVaries(f2) && f1_held_at_zero) {
    hold(f2, "with f1 held at 0 the sample fraction does not depend on f2");
  } else if (layout.PhysicalVaries(f2) && layout.PhysicalVaries(f0)) {
    hold(f2,
         "the sample fraction sees f0 and f2 only as f0·exp(−f1·f2) (one parameter; with "
         "f1 = 0 f2 has no effect)");
  }
  if (f1_held_at_zero && layout.PhysicalVaries(f0) && layout.PhysicalVaries(phys("f3"))) {
    hold(f0, "with f1 held at 0 the sample fraction sees f0 and f3 only as f0 + f3 (f3 spans it)");
  }
  // Directions the NLSQ answer's JᵀJ cannot see at all (relative eigenvalue at rounding
  // level; with a constant fraction, f1 = 0, f0 and f3 are seen only as f0 + f3). A slope
  // f1 near 0 then makes f0's precision ∝ f1² and f1's ∝ f0², a funnel no step size
  // crosses. The sample fraction's parameters are held in the order f2, f0, f3, f1 while a
  // hold removes a dimension of that null space (rank of its rows over the held ones), so
  // k unseen directions hold k parameters.
  if (s.warm_physics != nullptr) {
    std::vector<const nlsq::WeakDirection*> unseen;
    for (const auto& w : s.warm_physics->report.degeneracy.weakest) {
      if (w.relative_eigenvalue < kUnseenEigenvalue) unseen.push_back(&w);
    }
    const auto row = [&](int p) {  // parameter p's components in the unseen directions
      Eigen::RowVectorXd r = Eigen::RowVectorXd::Zero(static_cast<Eigen::Index>(unseen.size()));
      for (std::size_t k = 0; k < unseen.size(); ++k) {
        for (const auto& [name, c] : unseen[k]->components) {
          if (phys(name) == p) r(static_cast<Eigen::Index>(k)) = c;
        }
      }
      return r;
    };
    const auto rank = [](const std::vector<Eigen::RowVectorXd>& rows) {
      if (rows.empty()) return Eigen::Index{0};
      Eigen::MatrixXd m(static_cast<Eigen::Index>(rows.size()), rows.front().size());
      for (std::size_t i = 0; i < rows.size(); ++i) m.row(static_cast<Eigen::Index>(i)) = rows[i];
      Eigen::FullPivLU<Eigen::MatrixXd> lu(m);
      lu.setThreshold(0.1);  // a component below 0.1 does not carry a direction
      return lu.rank();
    };
    std::vector<Eigen::RowVectorXd> held_rows;
    for (int p = 0; p < sp.index.n_phys; ++p) {
      if (!unseen.empty() && layout.PhysicalVaries(p) && !vary[static_cast<std::size_t>(p)]) {
        held_rows.push_back(row(p));
      }
    }
    for (const int p : {f2, f0, phys("f3"), f1}) {
      if (unseen.empty() || !vary[static_cast<std::size_t>(p)]) continue;
      std::vector<Eigen::RowVectorXd> with = held_rows;
      with.push_back(row(p));
      if (rank(with) <= rank(held_rows)) continue;
      held_rows = std::move(with);
      std::string directions;
      for (const auto* w : unseen) {
        std::string d;
        for (const auto& [name, c] : w->components) {
          d += fmt::format("{}{:+.2f}·{}", d.empty() ? "" : " ", c, name);
        }
        directions += fmt::format("{}{} (relative eigenvalue {:.2g})",
                                  directions.empty() ? "" : ", ", d, w->relative_eigenvalue);
      }
      hold(p, fmt::format("the NLSQ answer's JᵀJ does not see {}", directions));
    }
  }
  if (notes.empty()) return notes;
  std::vector<double> physics(static_cast<std::size_t>(sp.index.n_phys));
  for (int p = 0; p < sp.index.n_phys; ++p) physics[static_cast<std::size_t>(p)] = value(p);
  ApplyHolds(vary, physics, sp, s);
  return notes;
}

}  // namespace homodyne::cmc::phases
