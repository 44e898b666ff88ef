// XpcsFitSession's constructor, phase by phase: the data, the per-angle layout and held
// physics, the start and bounds, the problem on the communicator, the degrees of freedom.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/choices.h"
#include "config/config_bridge.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "nlsq/initial_scaling.h"
#include "nlsq/streaming_scaling.h"
#include "nlsq/xpcs_fit_impl.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {
namespace {

// xpcsjax's heterodyne default of regularization.lambda (its template writes 1.0).
constexpr double kTwoComponentDefaultLambda = 0.01;

// The rank's blocks as model row tiles on the fit grid (loader index − 1).
std::vector<std::vector<model::RowTile>> BlocksOf(const io::LocalData& local, int rank) {
  std::vector<std::vector<model::RowTile>> blocks;
  std::size_t next = 0;
  for (int b = local.plan.first_block(rank); b < local.plan.end_block(rank); ++b) {
    const std::size_t n_tiles = local.plan.BlockTiles(b).size();
    std::vector<model::RowTile> tiles;
    for (std::size_t k = 0; k < n_tiles; ++k, ++next) {
      const io::LocalTile& lt = local.tiles.at(next);
      tiles.push_back({lt.tile.angle, static_cast<int>(lt.tile.row - 1),
                       static_cast<int>(lt.tile.col_begin - 1), static_cast<int>(lt.tile.count),
                       local.values.data() + lt.offset, nullptr, 2.0});
    }
    blocks.push_back(std::move(tiles));
  }
  HOMODYNE_CHECK(next == local.tiles.size(), "tiles do not match the plan's blocks");
  return blocks;
}

// What the later phases need of the loaded data.
struct DataShape {
  int n_phi = 0;
  std::vector<double> t_fit;  // t = 0 excluded
  model::Geometry geometry;
};

// Phase 1. Rank 0 selects and partitions, every rank reads its blocks (or streams them).
DataShape LoadData(XpcsFitSession::Impl& s) {
  const Comm& comm = s.comm;
  const NlsqRunOptions& options = s.options;
  {
    PhaseTimes::Scope t(s.phases, "load");
    if (options.in_memory != nullptr) {
      s.local = io::DistributeInMemory(comm, *options.in_memory,
                                       /*first_row=*/s.mode == model::AnalysisMode::kTwoComponent);
      s.memory.reason = "data in memory";
    } else {
      FitData data = LoadFitData(
          comm, s.cfg, LoadOptionsFromConfig(s.cfg, options.data_file),
          {options.strategy, options.memory_limit_bytes, options.threads, options.ranks_on_node,
           options.stream_window_points, options.read_ahead_start},
          s.logger);
      s.local = std::move(data.local);
      s.memory = data.plan;
      s.stream = std::move(data.stream);
    }
  }
  const io::DatasetMetadata& meta = s.local.meta;
  s.logger.Info(
      "{} {} points on {} rank(s) in {:.2f} s", s.stream ? "set up streaming of" : "loaded",
      s.local.plan.total_points(), comm.size(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.t_start).count());
  if (meta.n_frames < 3) {
    RunCollectively(comm, [&] {
      ThrowBadInput(fmt::format("{} frame(s) selected; a fit needs at least 3", meta.n_frames),
                    meta.file, config::keys::FrameWindowKey());
    });
  }
  DataShape shape;
  shape.n_phi = static_cast<int>(meta.n_angles());
  s.phi = meta.phi_values();
  shape.t_fit.assign(meta.t.begin() + 1, meta.t.end());
  shape.geometry = GeometryFromConfig(s.cfg, meta.q_physics);
  s.logger.Info("data: {} angle(s) {}, q = {:.6g} 1/Å, {} frames (dt = {} s), {} fitted pairs",
                shape.n_phi, fmt::join(s.phi, ","), meta.q_physics, meta.n_frames, meta.dt,
                s.local.plan.total_points());
  s.logger.Debug("{}", s.local.plan.Table());
  return shape;
}

// Phase 2. The per-angle layout, its scaling estimates and the held physics; returns the
// expanded start and bounds for phase 3.
ExpandedStart BuildLayout(XpcsFitSession::Impl& s, int n_phi) {
  const config::Config& cfg = s.cfg;
  const model::LayoutOptions layout_options = LayoutOptionsFromConfig(cfg);
  s.monitor = RunCollectively(s.comm, [&] {
    return GradientMonitorOptions::FromConfig(cfg.optimization.nlsq.anti_degeneracy);
  });
  s.resolved = model::ResolveScalingLayout(layout_options, n_phi);
  s.scaling_bounds = {cfg.contrast.min, cfg.contrast.max, cfg.offset.min, cfg.offset.max};
  // xpcsjax holds its two_component constant layout at Q95 estimates; every other layout and
  // start, and the homodyne modes, use Q90 (heterodyne spec §3; physics spec §1.9).
  const bool quantile_fixed = s.mode == model::AnalysisMode::kTwoComponent &&
                              s.resolved == model::ScalingLayout::kFixedConstant;
  const std::vector<model::ScalingEstimate> estimates = detail::EstimateScaling(
      s, quantile_fixed ? model::ScalingQuantiles::kQ95 : model::ScalingQuantiles::kQ90);
  if (quantile_fixed) s.quantile_fixed = estimates;
  s.index = model::ExpandedIndex(s.mode, n_phi);
  ExpandedStart start = RunCollectively(s.comm, [&] {
    return ExpandedStartFromConfig(cfg, s.mode, estimates, s.options.initial,
                                   UnsetStart::kNlsqDefault);
  });
  // Held physics (EffectiveParameter::vary false) stay at their starting value: no optimiser
  // column, so the solvers, the global search and the DOF never see them.
  s.held = HeldPhysicsFromConfig(cfg, s.index, start.values);
  s.estimates = estimates;
  s.layout = std::make_unique<model::ParameterLayout>(
      model::ParameterLayout::Create(s.resolved, s.mode, s.phi, estimates,
                                     layout_options.fourier_order)
          .WithHeldPhysics(s.held.vary, s.held.values));
  s.logger.Info("per-angle scaling: {} ({} optimised parameters)", model::ToString(s.resolved),
                s.layout->num_optimised());
  if (s.layout->num_optimised() == 0) {
    RunCollectively(s.comm, [&] {
      ThrowBadInput(fmt::format("nothing to fit: every physical parameter is held and the {} "
                                "per-angle layout fits no scaling",
                                model::ToString(s.resolved)),
                    cfg.source,
                    config::keys::KeyPair(config::keys::kInitialParameters, "fixed_parameters",
                                          "active_parameters"));
    });
  }
  if (s.layout->num_physical_held() > 0) {
    std::vector<std::string> held;
    for (int p = 0; p < s.index.n_phys; ++p) {
      if (!s.layout->PhysicalVaries(p)) {
        held.push_back(fmt::format(
            "{} = {:.6g}", model::PhysicalParameterNames(s.mode)[static_cast<std::size_t>(p)],
            s.held.values[static_cast<std::size_t>(p)]));
      }
    }
    s.logger.Info("held parameters (not fitted): {}", fmt::join(held, ", "));
  }
  return start;
}

// Phase 3. The optimiser's bounds and start (an explicit options.start wins).
void SetStartAndBounds(XpcsFitSession::Impl& s, const ExpandedStart& start, int n_phi) {
  model::Bounds expanded_bounds = start.bounds;
  const bool xpcsjax_bounds = s.mode == model::AnalysisMode::kTwoComponent &&
                              s.resolved == model::ScalingLayout::kIndividual &&
                              ApplyTwoComponentIndividualBounds(s.cfg, s.index, expanded_bounds);
  s.bounds = s.layout->OptimiserBounds(expanded_bounds);
  s.x0 = s.options.start.empty() ? s.layout->FromExpanded(start.values) : s.options.start;
  if (xpcsjax_bounds) {
    s.logger.Info(
        "per-angle scaling: every contrast in [{:g}, {:g}], xpcsjax's individual bounds "
        "(configured contrast bounds other than [0, 1] would replace them)",
        model::kFourierContrastRange.lower, model::kFourierContrastRange.upper);
    // The start from the config or the data (the Q90 estimates, a configured contrast) may
    // lie outside them; an explicit start (options.start) is the caller's.
    if (s.options.start.empty()) {
      for (std::size_t i = 0; i < static_cast<std::size_t>(2 * n_phi); ++i) {
        s.x0[i] = std::clamp(s.x0[i], s.bounds.lower[i], s.bounds.upper[i]);
      }
    }
  }
}

// Phase 4. The problem on this communicator, with its loss and (two_component) the scaling
// spread penalty.
void BuildProblem(XpcsFitSession::Impl& s, const DataShape& shape) {
  const config::Config& cfg = s.cfg;
  const NlsqRunOptions& options = s.options;
  XpcsProblemSetup setup;
  setup.mode = s.mode;
  setup.geometry = shape.geometry;
  setup.t = shape.t_fit;
  setup.phi_deg = s.phi;
  if (s.stream) {
    setup.stream = s.stream.get();
  } else {
    setup.blocks = BlocksOf(s.local, s.comm.rank());
  }
  setup.first_block = s.local.plan.first_block(s.comm.rank());
  setup.total_blocks = s.local.plan.n_blocks();
  setup.sigma = options.sigma;
  s.loss = FitLossFromConfig(cfg, options.sigma);
  s.f_scale = cfg.optimization.nlsq.f_scale;
  if (s.loss.robust()) {
    s.logger.Info(
        "loss: {}, f_scale {:g}: the fit minimises sum w (f_scale/sigma)^2 rho(((c2_exp - "
        "c2_model)/f_scale)^2) (sigma {:g}), the value the NLSQ lines call {}; the plain chi2 "
        "is logged beside the final one and in the summary",
        model::ToString(s.loss.kind), cfg.optimization.nlsq.f_scale, options.sigma,
        model::ObjectiveName(s.loss));
  }
  setup.loss = s.loss;
  setup.threads = options.threads;
  setup.worker_start = options.worker_start;
  setup.ledger = s.ledger;
  {
    PhaseTimes::Scope t(s.phases, "setup");
    s.problem = std::make_unique<XpcsProblem>(s.comm, std::move(setup), *s.layout);
  }
  // L3 (xpcsjax's rule, two_component only): regularization.mode other than none adds the
  // CV rows wherever there is a contrast and an offset per angle to spread.
  const auto& ad = cfg.optimization.nlsq.anti_degeneracy;
  if (s.mode == model::AnalysisMode::kTwoComponent &&
      ad.regularization_mode != config::RegularizationMode::kNone &&
      (s.resolved == model::ScalingLayout::kIndividual ||
       s.resolved == model::ScalingLayout::kFourier)) {
    const double lambda = ad.regularization_lambda.value_or(kTwoComponentDefaultLambda);
    s.problem->SetScalingPenalty(ScalingSpreadPenalty(s.index, lambda, options.sigma));
    s.logger.Info(
        "NLSQ: per-angle scaling regularised (regularization.mode {}): rows sqrt({:.6g})·CV of "
        "the contrasts and of the offsets",
        config::ChoiceName(ad.regularization_mode), lambda);
  }
}

// Phase 5. homodyne's degrees of freedom: n_phi·n_t² data, the layout's effective parameters.
void CountDegreesOfFreedom(XpcsFitSession::Impl& s, const DataShape& shape) {
  s.n_t = static_cast<std::int64_t>(shape.t_fit.size());
  s.n_data = static_cast<std::int64_t>(shape.n_phi) * s.n_t * s.n_t;  // homodyne's convention
  // Held physics are not parameters of the fit: they count in no layout's DOF.
  const int held = s.layout->num_physical_held();
  s.p_eff = s.resolved == model::ScalingLayout::kAveraged ? s.index.size() - held
            : (s.resolved == model::ScalingLayout::kFixedConstant ||
               s.resolved == model::ScalingLayout::kConstantAveraged)
                ? s.index.n_phys - held
                : s.layout->num_optimised();
}

}  // namespace

std::vector<model::ScalingEstimate> detail::EstimateScaling(XpcsFitSession::Impl& s,
                                                            model::ScalingQuantiles rule) {
  PhaseTimes::Scope t(s.phases, "initial_scaling");
  // xpcsjax pools two_component's full matrix; homodyne pools its fit grid.
  const ScalingPool pool = s.mode == model::AnalysisMode::kTwoComponent ? ScalingPool::kFullMatrix
                                                                        : ScalingPool::kFitGrid;
  if (s.stream) {
    const std::int64_t before = s.stream->windows_loaded();
    auto estimates =
        EstimateInitialScalingStreaming(s.comm, s.local, *s.stream, s.scaling_bounds, rule, pool);
    s.ledger->CountIn("initial_scaling", PassKind::kData, StreamReadsSince(*s.stream, before));
    return estimates;
  }
  // EstimateInitialScaling's visit of the one in-core window, counted.
  int passes = 0;
  auto estimates = EstimateInitialScalingOverWindows(
      s.comm, s.local,
      [&](const ScalingWindowVisit& visit) {
        ++passes;
        visit(s.local.tiles, s.local.values);
      },
      s.scaling_bounds, rule, pool);
  s.ledger->CountIn("initial_scaling", PassKind::kData, passes);
  return estimates;
}

int detail::StreamReadsSince(const BlockStream& stream, std::int64_t windows_before) {
  const std::int64_t windows = std::max(1, stream.num_windows());
  return static_cast<int>((stream.windows_loaded() - windows_before + windows - 1) / windows);
}

XpcsFitSession::XpcsFitSession(const Comm& comm, const config::Config& cfg,
                               const NlsqRunOptions& options, const Logger& logger)
    : impl_(std::make_unique<Impl>(comm, cfg, options, logger)) {
  Impl& s = *impl_;
  s.mode = cfg.analysis_mode;
  const DataShape shape = LoadData(s);
  const ExpandedStart start = BuildLayout(s, shape.n_phi);
  SetStartAndBounds(s, start, shape.n_phi);
  BuildProblem(s, shape);
  CountDegreesOfFreedom(s, shape);
}

}  // namespace homodyne::nlsq
