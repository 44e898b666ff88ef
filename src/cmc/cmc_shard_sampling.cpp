#include "cmc/cmc_phases.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cmc/shard_map_export.h"

namespace homodyne::cmc::phases {

// ---------------------------------------------------------------------------------------
// Phase 5: sampling this rank's shards (shard s on rank s mod P).

// Levenberg–Marquardt steps of a shard's mode search before its Laplace map is built.
constexpr int kModeSearchSteps = 200;

double Median(std::vector<double> v) { return model::Percentile(std::move(v), 50.0); }

// 1.4826·MAD of the shard's values, floored at 0.001 (homodyne's noise scale).
double NoiseScale(const std::vector<model::RowTile>& tiles) {
  std::vector<double> v;
  for (const auto& t : tiles) v.insert(v.end(), t.data, t.data + t.count);
  if (v.empty()) return 0.001;
  const double m = Median(v);
  for (double& x : v) x = std::abs(x - m);
  return std::max(1.4826 * Median(v), 0.001);
}

// The row segments of shard s as model tiles over the data.
std::vector<model::RowTile> ShardTiles(const CmcData& d, const Shards& shards, int s) {
  std::vector<model::RowTile> tiles;
  for (const auto& seg : shards.plan.shards[static_cast<std::size_t>(s)]) {
    const double* row =
        d.matrix(seg.angle) + static_cast<std::size_t>(seg.row * d.nf + seg.col_begin);
    tiles.push_back({seg.angle, static_cast<int>(seg.row - 1), static_cast<int>(seg.col_begin - 1),
                     static_cast<int>(seg.count), row, nullptr, 1.0});
  }
  return tiles;
}

// Pools the chains' draws and computes the shard's diagnostics.
// A chain's draw is θ's n_theta coordinates, then log σ unless σ is known (`known_sigma`).
void SummariseChains(const std::vector<nuts::ChainRun>& runs, int n_theta,
                     std::optional<double> known_sigma, const nuts::NutsOptions& no,
                     const SamplingSites& sites, LocalShardResult& r) {
  const auto stride = static_cast<std::size_t>(n_theta + (known_sigma ? 0 : 1));
  const auto n_chains = static_cast<int>(runs.size());
  double accept = 0, sigma_sum = 0, step_sum = 0;
  std::int64_t divergent = 0, saturated = 0, draws = 0;
  std::vector<nuts::Chains> chains(static_cast<std::size_t>(n_theta));
  std::vector<nuts::Chains> theta_chains(static_cast<std::size_t>(n_theta));
  for (const nuts::ChainRun& run : runs) {
    for (int p = 0; p < n_theta; ++p)
      chains[static_cast<std::size_t>(p)].push_back(run.Parameter(p));
    for (auto& tc : theta_chains) tc.emplace_back();
    for (int j = 0; j < no.num_samples; ++j) {
      const double* q = run.draws.data() + static_cast<std::size_t>(j) * stride;
      r.draws.insert(r.draws.end(), q, q + n_theta);
      if (!known_sigma) sigma_sum += std::exp(q[n_theta]);
      const std::vector<double> th = sites.ToTheta(q);
      for (int p = 0; p < n_theta; ++p) {
        theta_chains[static_cast<std::size_t>(p)].back().push_back(th[static_cast<std::size_t>(p)]);
      }
    }
    std::int64_t sampling_gradients = 0;
    for (const auto& st : run.stats) sampling_gradients += st.n_leapfrog;
    r.diag.gradient_evaluations += sampling_gradients;
    r.diag.warmup_gradient_evaluations += run.summary.num_gradient_evaluations - sampling_gradients;
    r.diag.tree_depth_histogram.resize(static_cast<std::size_t>(no.max_tree_depth) + 1, 0);
    for (const auto& st : run.stats) {
      ++r.diag.tree_depth_histogram[static_cast<std::size_t>(
          std::clamp(st.tree_depth, 0, no.max_tree_depth))];
      step_sum += st.step_size;
      accept += st.accept_stat;
      divergent += st.divergent ? 1 : 0;
      saturated += st.tree_depth >= no.max_tree_depth ? 1 : 0;
      ++draws;
    }
  }
  double max_rhat = 0, min_ess = 1e300;
  for (const auto& ch : chains) {
    if (n_chains > 1) max_rhat = std::max(max_rhat, nuts::SplitRankNormalizedRhat(ch).Max());
    const auto ess = nuts::SplitRankNormalizedEss(ch);
    min_ess = std::min(min_ess, std::min(ess.bulk, ess.tail));
  }
  for (const auto& tc : theta_chains) {
    r.diag.rhat.push_back(n_chains > 1 ? nuts::SplitRankNormalizedRhat(tc).Max() : std::nan(""));
    const auto ess = nuts::SplitRankNormalizedEss(tc);
    r.diag.ess_bulk.push_back(ess.bulk);
    r.diag.ess_tail.push_back(ess.tail);
  }
  r.diag.divergences = divergent;
  r.diag.step_size_mean = draws > 0 ? step_sum / static_cast<double>(draws) : 0.0;
  r.diag.treedepth_hits = saturated;
  r.diag.max_rhat = n_chains > 1 ? max_rhat : std::nan("");
  r.diag.min_ess = min_ess;
  r.diag.divergence_rate = draws > 0 ? static_cast<double>(divergent) / draws : 0.0;
  r.diag.acceptance_rate = draws > 0 ? accept / static_cast<double>(draws) : 0.0;
  r.diag.noise_sigma_mean = known_sigma
                                ? *known_sigma
                                : sigma_sum / static_cast<double>(std::max<std::int64_t>(draws, 1));
  r.diag.treedepth_saturation_rate =
      draws > 0 ? static_cast<double>(saturated) / static_cast<double>(draws) : 0.0;
}

std::string CoordinateChoice::Reason(const std::vector<std::string>& axis_names) const {
  switch (why) {
    case Why::kOff:
      return "laplace_whitening is false: the unwhitened coordinates from the configured start";
    case Why::kChecked:
      return "the Laplace map at the shard's mode passed the axis check (" +
             check.Describe(axis_names) + ")";
    case Why::kFailedKept:
      return "the Laplace map at the shard's mode failed the axis check (" +
             check.Describe(axis_names) +
             "); kept: the unwhitened coordinates sampled worse on every shard measured where "
             "the check failed (docs/cmc.md)";
    case Why::kNotPositiveDefinite:
      return "the Hessian at the shard's mode is not positive definite: the unwhitened "
             "coordinates from the configured start";
  }
  return {};
}

void CoordinateChoice::Pack(std::vector<double>& out) const {
  out.insert(out.end(), {static_cast<double>(why), static_cast<double>(check.axis), check.k,
                         check.drop, check.scale, check.min_scale, check.max_scale});
}

CoordinateChoice CoordinateChoice::Unpack(const double* in) {
  CoordinateChoice c;
  c.why = static_cast<Why>(static_cast<int>(in[0]));
  c.check.axis = static_cast<int>(in[1]);
  c.check.k = in[2];
  c.check.drop = in[3];
  c.check.scale = in[4];
  c.check.min_scale = in[5];
  c.check.max_scale = in[6];
  c.check.poor = c.why == Why::kFailedKept;
  return c;
}

std::vector<std::string> UnwhitenedAxisNames(const SamplingSites& sites,
                                             const std::vector<std::string>& names,
                                             bool samples_sigma) {
  std::vector<std::string> out = sites.geometry.active()
                                     ? sites.geometry.SiteNames(sites.reparam.SiteNames(names))
                                     : sites.reparam.SiteNames(names);
  if (samples_sigma) out.emplace_back("log_sigma");
  return out;
}

ShardStart PrepareShardStart(const ShardPosteriorSetup& setup, const model::ParameterLayout& layout,
                             std::span<const double> theta0, double sigma0, bool whiten, int shard,
                             const Logger& logger) {
  ShardStart start{{theta0.begin(), theta0.end()}, sigma0, {}, {}};
  if (!whiten) return start;
  const double cpu_start = ThreadCpuSeconds();
  ShardPosteriorSetup one = setup;
  one.threads = 1;
  one.worker_start = nullptr;
  const ShardPosterior post(std::move(one), layout);
  const ShardMode mode = post.FindMode(theta0, sigma0, kModeSearchSteps);
  start.whitening = post.LaplaceAt(mode.u);
  ExportShardMapIfRequested(
      {shard, layout.names(), &setup, &mode, &start.whitening, ThreadCpuSeconds() - cpu_start});
  if (start.whitening.empty()) {
    start.choice.why = CoordinateChoice::Why::kNotPositiveDefinite;
    logger.Info(
        "CMC: shard {}: no Laplace whitening (the Hessian at the mode is not positive "
        "definite); sampling the unwhitened coordinates from the configured start",
        shard);
    return start;
  }
  start.theta = mode.theta;
  start.sigma = mode.sigma;
  logger.Debug("CMC: shard {}: mode after {} step(s){}, log density {:.6g} -> {:.6g} at {:.5g}",
               shard, mode.iterations, mode.converged ? "" : " (step limit)",
               mode.start_log_density, mode.log_density, fmt::join(mode.theta, ", "));
  if (!mode.converged) {
    // Said where a user reads it: the map below is the curvature where the search stopped,
    // which need not be the shard's mode (the axis check then judges that map).
    logger.Info(
        "CMC: shard {}: the mode search stopped at its limit of {} steps before converging "
        "(log density {:.6g} -> {:.6g}); the Laplace map is built where it stopped",
        shard, kModeSearchSteps, mode.start_log_density, mode.log_density);
  }
  // `post` has no whitening: its density is the one in u, which the map's axes live in.
  start.choice.check = CheckWhiteningAxes(post, start.whitening);
  // A map that fails the check is named and kept: on every shard measured where the check
  // fired and the chains then sampled the unwhitened coordinates, they sampled worse (the
  // laminar shard lam2 of docs/cmc.md: ESS 3, R-hat 1.9; shard 1 of
  // tests/cli/test_cmc_two_component_hold.sh: depth-cap share 77 % against 15 %; the shipped
  // real_static example at 60 frames: 34 % divergent draws, the shard rejected, against none).
  if (start.choice.check.poor) {
    start.choice.why = CoordinateChoice::Why::kFailedKept;
  } else {
    start.choice.why = CoordinateChoice::Why::kChecked;
  }
  const std::vector<std::string> names = UnwhitenedAxisNames(
      SamplingSites{setup.priors, setup.lower, setup.upper, setup.reparam, setup.sampling_geometry,
                    setup.theta_lower, setup.theta_upper},
      layout.names(), post.samples_sigma());
  logger.Info("CMC: shard {}: sampling the {} coordinates: {}", shard, start.choice.Coordinates(),
              start.choice.Reason(names));
  return start;
}

// Chain draws in whitened coordinates q → the coordinates u before the whitening.
void UnwhitenDraws(const Whitening& w, std::vector<nuts::ChainRun>& runs) {
  if (w.empty()) return;
  const std::size_t d = w.centre.size();
  for (nuts::ChainRun& run : runs) {
    for (std::size_t row = 0; row + d <= run.draws.size(); row += d) {
      const auto q = std::span<double>(run.draws).subspan(row, d);
      const std::vector<double> u = w.ToU(q);
      std::copy(u.begin(), u.end(), q.begin());
    }
  }
}

namespace {

// Progress inside this rank's shards. The chains (on the worker threads) only bump
// `iterations`; a ProgressTicker on rank 0 reads it and prints, so no chain waits for
// output and nothing here changes a draw. Counts are warmup + sampling iterations of all
// chains ("draws" on the line), including a discarded warmup attempt's.
class ShardWatch {
 public:
  ShardWatch(Progress& progress, int my_total, int k_shards, std::int64_t per_shard)
      : progress_(progress),
        my_total_(my_total),
        k_shards_(k_shards),
        per_shard_(per_shard),
        start_(std::chrono::steady_clock::now()) {}

  std::atomic<std::int64_t>& iterations() { return iterations_; }

  // Shard s (this rank's mine-th, from 1) starts an attempt of `total` iterations.
  void BeginAttempt(int s, int mine, std::int64_t total) {
    const std::lock_guard lock(mutex_);
    done_before_ += iterations_.exchange(0);
    shard_ = s;
    mine_ = mine;
    total_ = total;
  }

  // Called by the ticker, and after every shard.
  void Show(std::string_view what) {
    const std::lock_guard lock(mutex_);
    if (shard_ < 0) return;
    const std::int64_t n = iterations_.load(std::memory_order_relaxed);
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done_before_ + n) / elapsed : 0.0;
    const std::int64_t left = std::max<std::int64_t>(total_ - n, 0) +
                              static_cast<std::int64_t>(my_total_ - mine_) * per_shard_;
    const std::string eta = rate > 0 ? fmt::format("ETA {:.0f} s", static_cast<double>(left) / rate)
                                     : std::string("ETA unknown");
    progress_.Update(
        fmt::format("shard {} {}({}/{} on rank 0, {} in all): {}/{} draws, {:.1f} draws/s, {}",
                    shard_, what, mine_, my_total_, k_shards_, n, total_, rate, eta));
  }

 private:
  Progress& progress_;
  const int my_total_, k_shards_;
  const std::int64_t per_shard_;  // iterations of a shard without warmup reruns
  const std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::atomic<std::int64_t> iterations_{0};
  std::int64_t done_before_ = 0;  // earlier shards' and attempts' iterations
  int shard_ = -1, mine_ = 0;
  std::int64_t total_ = 0;
};

// What the chains' checkpoints are written for: the data, the start and the sampling
// geometry (a checkpoint of other data or another start is not resumed).
std::string ShardCheckpointDataId(const SamplingContext& c) {
  const CmcData& d = c.data;
  std::string data_id =
      checkpoint::DescribeData(io::DigestMatrices(d.meta(), d.matrices()), d.meta().q_physics,
                               d.phi, d.nf, d.meta().dt, d.n_points);
  for (double v : c.start.theta0) data_id += fmt::format("cmc.theta0: {:a}\n", v);
  const std::optional<double> known_sigma = c.cfg.optimization.cmc.known_sigma;
  if (known_sigma) data_id += fmt::format("cmc.known_sigma: {:a}\n", *known_sigma);
  data_id += "cmc.sampling_geometry: " + c.sites.geometry.Describe() + "\n";
  if (c.cfg.optimization.cmc.reparameterization.laplace_whitening) {
    // The axis check is a deterministic function of the shard: a resume makes the same choice.
    // The mode search's σ start is named: a checkpoint whose whitening came from the search
    // before it (σ from the data's spread) is not resumed in another map.
    data_id +=
        "cmc.laplace_whitening: mode (sigma from its conditional maximum), whitening and axis "
        "check per shard\n";
  }
  return data_id;
}

// Shard s's posterior: its tiles, the sampling sites' priors and bounds, and a noise prior
// scaled to the shard's own data (`noise`, NoiseScale of the tiles; tempered as the shard's
// likelihood).
ShardPosteriorSetup ShardSetup(const SamplingContext& c, std::vector<model::RowTile> tiles,
                               double noise) {
  const CmcData& d = c.data;
  ShardPosteriorSetup setup;
  setup.mode = c.cfg.analysis_mode;
  setup.geometry = d.geometry;
  setup.t = d.t_fit;
  setup.phi_deg = d.phi;
  setup.tiles = std::move(tiles);
  setup.priors = c.sites.priors;
  setup.lower = c.sites.lower;
  setup.upper = c.sites.upper;
  setup.reparam = c.sites.reparam;
  setup.sampling_geometry = c.sites.geometry;
  setup.theta_lower = c.sites.theta_lower;
  setup.theta_upper = c.sites.theta_upper;
  setup.sigma_prior = {PriorType::kHalfNormal, 0.0, 1.5 * noise * std::sqrt(c.shards.temper)};
  setup.known_sigma = c.cfg.optimization.cmc.known_sigma;
  return setup;
}

// One shard's chains. A shard whose chains diverge too often is rerun with twice the warmup
// (up to validation.warmup_retries times) instead of being dropped by the filter: short
// warmups leave some shards' curved ridges unadapted (docs/cmc.md, step 6b). The decision
// depends on the shard's own draws only, so it is the same on any rank and thread count, and
// a resumed run restores the attempts it needs from the checkpoint.
LocalShardResult SampleShard(const SamplingContext& c, checkpoint::CmcChainRunner& runner,
                             const ShardPosteriorSetup& setup, const ShardStart& start, int s,
                             int mine, ShardWatch& watch) {
  const nuts::NutsOptions& no = c.sampler.nuts;
  const int n_chains = c.sampler.chains;
  const int n_theta = c.params.size();
  const double max_divergence_rate = c.cfg.optimization.cmc.validation.max_divergence_rate;
  const int warmup_retries = c.cfg.optimization.cmc.validation.warmup_retries;
  ShardChainOptions chain_options;
  chain_options.num_chains = n_chains;
  chain_options.threads = c.options.threads;
  chain_options.worker_start = c.options.worker_start;
  LocalShardResult r;
  std::int64_t discarded_gradients = 0;
  for (int attempt = 0;; ++attempt) {
    nuts::NutsOptions attempt_options = no;
    attempt_options.num_warmup = no.num_warmup << attempt;
    const int first = attempt * n_chains;  // the attempt's own chain indices and streams
    runner.PrepareShard(s, n_chains, first);
    const std::int64_t per_chain = attempt_options.num_warmup + attempt_options.num_samples;
    watch.BeginAttempt(s, mine, per_chain * n_chains);
    ChainRounds rounds;
    rounds.start = [&](const ShardPosterior& post, int chain, std::span<const double> q0) {
      auto ch = runner.Start(s, first + chain, post, attempt_options, q0);
      // A chain restored from a checkpoint counts what it has already run.
      watch.iterations().fetch_add(ch ? ch->iteration() : per_chain);
      if (ch) ch->CountIterationsIn(&watch.iterations());
      return ch;
    };
    rounds.advance = [&](int chain, nuts::NutsChain& ch) { runner.Advance(s, first + chain, ch); };
    rounds.round_end = [&] { runner.RoundEnd(); };
    RunShardChainsInRounds(setup, c.params.layout, start.theta, start.sigma, chain_options, rounds);
    std::vector<nuts::ChainRun> runs;
    for (int chain = 0; chain < n_chains; ++chain) runs.push_back(runner.Result(s, first + chain));
    UnwhitenDraws(setup.whitening, runs);
    r = LocalShardResult{};
    r.shard = s;
    r.diag.shard = s;
    r.diag.points = c.shards.plan.Points(s);
    SummariseChains(runs, n_theta, setup.known_sigma, attempt_options, c.sites, r);
    r.diag.num_warmup = attempt_options.num_warmup;
    r.diag.warmup_attempts = attempt + 1;
    r.diag.warmup_gradient_evaluations += discarded_gradients;  // the reruns' price
    if (r.diag.divergence_rate <= max_divergence_rate || attempt >= warmup_retries) break;
    discarded_gradients += r.diag.warmup_gradient_evaluations + r.diag.gradient_evaluations;
    c.logger.Info(
        "CMC: shard {}: divergence rate {:.3f} > max_divergence_rate {:.3f} after {} warmup "
        "iterations; rerunning its chains with {}",
        s, r.diag.divergence_rate, max_divergence_rate, attempt_options.num_warmup,
        2 * attempt_options.num_warmup);
  }
  return r;
}

}  // namespace

// Chains in batches between checkpoint safe points (the same draws as one uninterrupted
// run per chain). Collective: a failure on one rank reaches the others at their next safe
// point (runner.Fail), so no rank waits in a safe point for a rank that has left; the
// failing rank's error is the agreed one.
// The progress line's rate counts from the start of sampling, not of the run (the run's
// start time is not needed).
std::vector<LocalShardResult> SampleLocalShards(const SamplingContext& c, Progress& progress,
                                                std::chrono::steady_clock::time_point /*t_start*/) {
  const Comm& world = c.world;
  const nuts::NutsOptions& no = c.sampler.nuts;
  const int n_chains = c.sampler.chains;
  const int k_shards = c.shards.count;
  checkpoint::CmcCheckpointSettings cs;
  cs.stop_on_signal = false;
  if (c.options.checkpoints) cs = *c.options.checkpoints;
  const bool known_sigma = c.cfg.optimization.cmc.known_sigma.has_value();
  checkpoint::CmcChainRunner runner(
      world, cs, ShardCheckpointDataId(c),
      {k_shards, n_chains, no.num_warmup, no.num_samples, c.params.size() + (known_sigma ? 0 : 1)},
      c.logger);
  std::vector<LocalShardResult> local;
  const int my_total = (k_shards - world.rank() + world.size() - 1) / world.size();
  ShardWatch watch(progress, my_total, k_shards,
                   static_cast<std::int64_t>(n_chains) * (no.num_warmup + no.num_samples));
  const auto run_local_shards = [&] {
    // Rank 0's line stands for the others (same shard sizes, same settings); only rank 0's
    // Progress is active, so other ranks start no ticker.
    std::optional<ProgressTicker> ticker;
    if (progress.active()) {
      ticker.emplace(std::min(progress.interval() / 4, 1.0), [&watch] { watch.Show(""); });
    }
    for (int s = world.rank(); s < k_shards; s += world.size()) {
      const FaultScope sampling("sampling", world.rank());  // reaches the others at a safe point
      std::vector<model::RowTile> tiles = ShardTiles(c.data, c.shards, s);
      if (tiles.empty()) continue;
      const double noise = NoiseScale(tiles);
      ShardPosteriorSetup setup = ShardSetup(c, std::move(tiles), noise);
      ShardStart start = PrepareShardStart(
          setup, c.params.layout, c.start.theta0, noise,
          c.cfg.optimization.cmc.reparameterization.laplace_whitening, s, c.logger);
      setup.whitening = std::move(start.whitening);
      const CoordinateChoice choice = start.choice;
      const auto shard_start = std::chrono::steady_clock::now();
      const int mine = static_cast<int>(local.size()) + 1;
      LocalShardResult r = SampleShard(c, runner, setup, start, s, mine, watch);
      r.coordinates = choice;
      r.diag.sampling_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - shard_start).count();
      local.push_back(std::move(r));
      watch.Show("done ");
    }
  };
  RunCollectively(world, [&] {
    try {
      run_local_shards();
      runner.Finish();
    } catch (const checkpoint::SamplingAborted&) {
      // Another rank's sampling failed: its error is agreed below.
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kCheckpointed) runner.Fail();
      throw;
    } catch (...) {
      runner.Fail();
      throw;
    }
  });
  return local;
}

// ---------------------------------------------------------------------------------------
// Phase 6: every shard's diagnostics and draws on rank 0.

// Collective; the result is filled on rank 0 only. Packed per shard as [shard, points, rhat,
// ess, div, acc, sigma, saturation, gradient evaluations, divergences, depth hits, warmup
// gradients, R̂…, bulk ESS…, tail ESS…, step size, seconds, warmup, attempts, depth histogram
// size, histogram…,
// n, draws…].
GatheredShards GatherShards(const Comm& world, const std::vector<LocalShardResult>& local,
                            int k_shards, int n_theta, const std::vector<std::string>& axis_names) {
  std::vector<double> packed;
  for (const auto& r : local) {
    packed.insert(
        packed.end(),
        {static_cast<double>(r.shard), static_cast<double>(r.diag.points), r.diag.max_rhat,
         r.diag.min_ess, r.diag.divergence_rate, r.diag.acceptance_rate, r.diag.noise_sigma_mean,
         r.diag.treedepth_saturation_rate, static_cast<double>(r.diag.gradient_evaluations),
         static_cast<double>(r.diag.divergences), static_cast<double>(r.diag.treedepth_hits),
         static_cast<double>(r.diag.warmup_gradient_evaluations)});
    packed.insert(packed.end(), r.diag.rhat.begin(), r.diag.rhat.end());
    packed.insert(packed.end(), r.diag.ess_bulk.begin(), r.diag.ess_bulk.end());
    packed.insert(packed.end(), r.diag.ess_tail.begin(), r.diag.ess_tail.end());
    packed.push_back(r.diag.step_size_mean);
    packed.push_back(r.diag.sampling_seconds);
    packed.push_back(static_cast<double>(r.diag.num_warmup));
    packed.push_back(static_cast<double>(r.diag.warmup_attempts));
    packed.push_back(static_cast<double>(r.diag.tree_depth_histogram.size()));
    for (std::int64_t c : r.diag.tree_depth_histogram) packed.push_back(static_cast<double>(c));
    r.coordinates.Pack(packed);
    packed.push_back(static_cast<double>(r.draws.size()));
    packed.insert(packed.end(), r.draws.begin(), r.draws.end());
  }
  const int count = static_cast<int>(packed.size());
  std::vector<int> counts(static_cast<std::size_t>(world.size()));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, world.get());
  std::vector<int> displs;
  int total = 0;
  if (world.is_root()) {
    for (int n : counts) {
      displs.push_back(total);
      total += n;
    }
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Gatherv(packed.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
              MPI_DOUBLE, 0, world.get());
  GatheredShards g;
  RunCollectively(world, [&] {
    if (!world.is_root()) return;
    g.diagnostics.resize(static_cast<std::size_t>(k_shards));
    g.draws.resize(static_cast<std::size_t>(k_shards), ShardDraws{n_theta, {}});
    std::size_t pos = 0;
    while (pos < all.size()) {
      const auto s = static_cast<std::size_t>(all[pos]);
      ShardDiagnostics& d = g.diagnostics[s];
      d.shard = static_cast<int>(s);
      d.points = static_cast<std::int64_t>(all[pos + 1]);
      d.max_rhat = all[pos + 2];
      d.min_ess = all[pos + 3];
      d.divergence_rate = all[pos + 4];
      d.acceptance_rate = all[pos + 5];
      d.noise_sigma_mean = all[pos + 6];
      d.treedepth_saturation_rate = all[pos + 7];
      d.gradient_evaluations = static_cast<std::int64_t>(all[pos + 8]);
      d.divergences = static_cast<std::int64_t>(all[pos + 9]);
      d.treedepth_hits = static_cast<std::int64_t>(all[pos + 10]);
      d.warmup_gradient_evaluations = static_cast<std::int64_t>(all[pos + 11]);
      pos += 12;
      const auto nt = static_cast<std::size_t>(n_theta);
      const auto at = [&](std::size_t k) { return all.begin() + static_cast<std::ptrdiff_t>(k); };
      d.rhat.assign(at(pos), at(pos + nt));
      d.ess_bulk.assign(at(pos + nt), at(pos + 2 * nt));
      d.ess_tail.assign(at(pos + 2 * nt), at(pos + 3 * nt));
      pos += 3 * nt;
      d.step_size_mean = all[pos];
      d.sampling_seconds = all[pos + 1];
      d.num_warmup = static_cast<int>(all[pos + 2]);
      d.warmup_attempts = static_cast<int>(all[pos + 3]);
      const auto n_depths = static_cast<std::size_t>(all[pos + 4]);
      for (std::size_t k = 0; k < n_depths; ++k) {
        d.tree_depth_histogram.push_back(static_cast<std::int64_t>(all[pos + 5 + k]));
      }
      pos += 5 + n_depths;
      const CoordinateChoice choice = CoordinateChoice::Unpack(&all[pos]);
      d.coordinates = choice.Coordinates();
      d.coordinates_reason = choice.Reason(axis_names);
      pos += CoordinateChoice::kPacked;
      const auto n = static_cast<std::size_t>(all[pos]);
      g.draws[s].draws.assign(at(pos + 1), at(pos + 1 + n));
      pos += 1 + n;
    }
  });
  return g;
}

}  // namespace homodyne::cmc::phases
