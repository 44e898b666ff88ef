#include "cmc/cmc_checkpoint.h"

#include <bit>
#include <cstdio>

#include <fmt/format.h>

#include "checkpoint/interrupt.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "nuts/nuts_chain.h"
#include "parallel/collective.h"

namespace homodyne::checkpoint {
namespace {

constexpr std::size_t kStatFields = 7;

std::string ChainPrefix(int shard, int chain) {
  return fmt::format("cmc.s{:05d}.c{:03d}.", shard, chain);
}

std::int64_t U2I(std::uint64_t v) { return std::bit_cast<std::int64_t>(v); }
std::uint64_t I2U(std::int64_t v) { return std::bit_cast<std::uint64_t>(v); }

}  // namespace

void StoreChainState(CheckpointRecord& r, const std::string& p, const nuts::NutsChainState& s,
                     int owner) {
  r.PutInts(p + "state.ints",
            {s.dimension, s.metric_kind, s.iteration, s.window_counter, s.window_size,
             s.window_next_end, s.welford_count, U2I(s.rng.seed), U2I(s.rng.stream_a),
             U2I(s.rng.stream_b), U2I(s.rng.position)},
            owner);
  r.PutDoubles(p + "state.doubles", {s.step_size, s.da_counter, s.da_s_bar, s.da_x_bar, s.da_mu},
               owner);
  r.PutDoubles(p + "state.position", s.position, owner);
  r.PutDoubles(p + "state.inverse_metric", s.inverse_metric, owner);
  r.PutDoubles(p + "state.welford_mean", s.welford_mean, owner);
  r.PutDoubles(p + "state.welford_m2", s.welford_m2, owner);
}

nuts::NutsChainState LoadChainState(const CheckpointRecord& r, const std::string& p) {
  nuts::NutsChainState s;
  const auto& i = r.Ints(p + "state.ints");
  const auto& d = r.Doubles(p + "state.doubles");
  HOMODYNE_CHECK(i.size() == 11 && d.size() == 5, "chain state datasets have the wrong size");
  s.dimension = static_cast<int>(i[0]);
  s.metric_kind = static_cast<int>(i[1]);
  s.iteration = i[2];
  s.window_counter = i[3];
  s.window_size = i[4];
  s.window_next_end = i[5];
  s.welford_count = i[6];
  s.rng = {I2U(i[7]), I2U(i[8]), I2U(i[9]), I2U(i[10])};
  s.step_size = d[0];
  s.da_counter = d[1];
  s.da_s_bar = d[2];
  s.da_x_bar = d[3];
  s.da_mu = d[4];
  s.position = r.Doubles(p + "state.position");
  s.inverse_metric = r.Doubles(p + "state.inverse_metric");
  s.welford_mean = r.Doubles(p + "state.welford_mean");
  s.welford_m2 = r.Doubles(p + "state.welford_m2");
  return s;
}

CmcChainRunner::CmcChainRunner(const Comm& world, CmcCheckpointSettings settings,
                               const std::string& data_description, std::vector<std::int64_t> meta,
                               const Logger& logger)
    : world_(world), settings_(std::move(settings)), meta_(std::move(meta)), logger_(logger) {
  RunCollectively(world_, [&] {
    if (settings_.frequency < 1) {
      ThrowBadInput(fmt::format("checkpoint_frequency must be ≥ 1 (got {})", settings_.frequency),
                    {}, config::keys::Key(config::keys::kCmcBackendConfig, "checkpoint_frequency"));
    }
  });
  store_ = std::make_unique<CheckpointStore>(
      world_, StoreOptions{settings_.dir, "cmc", settings_.keep_last},
      RunIdentity{settings_.config_description, data_description}, logger_);
  if (!settings_.resume) return;
  const auto loaded = store_->LoadNewest();
  if (!loaded) {
    logger_.Info("resume: no CMC checkpoint of this run in {}; sampling from the beginning",
                 store_->options().dir.string());
    return;
  }
  const CheckpointRecord& r = loaded->record;
  RunCollectively(world_, [&] {
    if (!r.Has("cmc.meta") || r.Ints("cmc.meta") != meta_) {
      ThrowBadInput(
          "the CMC checkpoint has other shards, chains, warmup, samples or dimension than this "
          "run",
          loaded->path.string(), "cmc.meta");
    }
  });
  int restored = 0, finished = 0;
  for (const auto& [name, entry] : r.entries()) {
    int shard = 0, chain = 0;
    char field[32] = {};
    if (std::sscanf(name.c_str(), "cmc.s%5d.c%3d.%31s", &shard, &chain, field) != 3 ||
        std::string(field) != "done") {
      continue;
    }
    if (shard % world_.size() != world_.rank()) continue;  // another rank's shard now
    const std::string p = ChainPrefix(shard, chain);
    Progress pr;
    pr.done = r.Int(p + "done") != 0;
    pr.draws = r.Doubles(p + "draws");
    pr.stats = r.Doubles(p + "stats");
    // Absent in checkpoints written before the count was kept: counted from the resume on.
    if (r.entries().count(p + "warmup_gradients") != 0) {
      pr.warmup_gradients = r.Int(p + "warmup_gradients");
    }
    if (!pr.done) pr.state = LoadChainState(r, p);
    finished += pr.done ? 1 : 0;
    ++restored;
    progress_[{shard, chain}] = std::move(pr);
  }
  logger_.Info(
      "resuming CMC from {} (written on {} rank(s)); rank 0 restores {} chain(s), {} finished",
      loaded->path.string(), loaded->ranks_at_write, restored, finished);
}

CmcChainRunner::~CmcChainRunner() = default;

int CmcChainRunner::writes() const { return store_->writes(); }
double CmcChainRunner::write_seconds() const { return store_->write_seconds(); }

CheckpointRecord CmcChainRunner::Record() const {
  CheckpointRecord r;
  r.PutInts("cmc.meta", meta_);
  const int me = world_.rank();
  for (const auto& [key, p] : progress_) {
    const std::string prefix = ChainPrefix(key.first, key.second);
    r.PutInts(prefix + "done", {p.done ? 1 : 0}, me);
    r.PutDoubles(prefix + "draws", p.draws, me);
    r.PutDoubles(prefix + "stats", p.stats, me);
    r.PutInts(prefix + "warmup_gradients", {p.warmup_gradients}, me);
    if (p.state) StoreChainState(r, prefix, *p.state, me);
  }
  return r;
}

void CmcChainRunner::SafePoint(bool finished, bool failed) {
  int flags[3] = {settings_.stop_on_signal && LocalStopSignal() != 0 ? 1 : 0, finished ? 0 : 1,
                  failed ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, flags, 3, MPI_INT, MPI_MAX, world_.get());
  all_done_ = flags[1] == 0;
  if (flags[2] != 0) {
    all_done_ = true;  // no rank joins another safe point
    if (!failed) throw SamplingAborted{};
    return;
  }
  if (flags[0] != 0 && !all_done_) {
    const auto path = store_->Write(Record());
    throw MarkAgreed(Error(ErrorKind::kCheckpointed, ResumeMessage(path.string())));
  }
  if (settings_.enabled) {
    if (const auto path = store_->TryWrite(Record(), settings_.fatal_write_errors)) {
      logger_.Debug("CMC checkpoint {}", path->string());
    }
  }
}

void CmcChainRunner::Fail() {
  if (!all_done_) SafePoint(false, true);
}

void CmcChainRunner::PrepareShard(int shard, int num_chains, int first_chain) {
  for (int c = first_chain; c < first_chain + num_chains; ++c) progress_[{shard, c}];
}

std::unique_ptr<nuts::NutsChain> CmcChainRunner::Start(int shard, int chain,
                                                       const nuts::LogDensity& density,
                                                       const nuts::NutsOptions& options,
                                                       std::span<const double> q0) {
  Progress& p = progress_.at({shard, chain});
  if (p.done) return nullptr;
  if (p.state) {
    return std::make_unique<nuts::NutsChain>(nuts::NutsChain::Restore(density, options, *p.state));
  }
  return std::make_unique<nuts::NutsChain>(density, options, q0, static_cast<std::uint64_t>(shard),
                                           static_cast<std::uint64_t>(chain));
}

void CmcChainRunner::Advance(int shard, int chain, nuts::NutsChain& ch) {
  Progress& p = progress_.at({shard, chain});
  if (p.done || ch.Done()) return;
  const nuts::IterationCallback hooks = [this](const nuts::NutsChain&,
                                               const nuts::IterationResult&) {
    const std::int64_t n = ++iterations_run_;
    MaybeKill("cmc_draw", n);
    MaybeSignal("cmc_draw", n, world_.rank());
    // A stop request ends the batch after this iteration: the safe point that follows
    // saves the chain where it is (a batch cut short continues to the same draws).
    return !(settings_.stop_on_signal && LocalStopSignal() != 0);
  };
  const std::int64_t f = settings_.frequency;
  const nuts::ChainRun part = nuts::RunChain(ch, hooks, f - ch.iteration() % f);
  p.draws.insert(p.draws.end(), part.draws.begin(), part.draws.end());
  for (const auto& st : part.warmup_stats) p.warmup_gradients += st.n_leapfrog;
  for (const auto& st : part.stats) {
    p.stats.insert(p.stats.end(), {st.accept_stat, static_cast<double>(st.tree_depth),
                                   static_cast<double>(st.n_leapfrog), st.divergent ? 1.0 : 0.0,
                                   st.energy, st.potential, st.step_size});
  }
  p.done = ch.Done();
  if (p.done) {
    p.state.reset();
  } else {
    p.state = ch.SaveState();
  }
}

nuts::ChainRun CmcChainRunner::Run(int shard, int chain, const nuts::LogDensity& density,
                                   const nuts::NutsOptions& options, std::span<const double> q0) {
  progress_[{shard, chain}];
  if (std::unique_ptr<nuts::NutsChain> ch = Start(shard, chain, density, options, q0)) {
    while (!ch->Done()) {
      Advance(shard, chain, *ch);
      SafePoint(false);
    }
  }
  return Result(shard, chain);
}

nuts::ChainRun CmcChainRunner::Result(int shard, int chain) const {
  const Progress& p = progress_.at({shard, chain});
  nuts::ChainRun run;
  run.dimension = static_cast<int>(meta_.at(4));
  run.draws = p.draws;
  for (std::size_t k = 0; k + kStatFields <= p.stats.size(); k += kStatFields) {
    nuts::TransitionStats st;
    st.accept_stat = p.stats[k];
    st.tree_depth = static_cast<int>(p.stats[k + 1]);
    st.n_leapfrog = static_cast<int>(p.stats[k + 2]);
    st.divergent = p.stats[k + 3] != 0.0;
    st.energy = p.stats[k + 4];
    st.potential = p.stats[k + 5];
    st.step_size = p.stats[k + 6];
    run.stats.push_back(st);
  }
  run.summary.num_draws = static_cast<int>(run.stats.size());
  run.summary.num_gradient_evaluations = p.warmup_gradients;  // warmup + sampling
  for (const auto& st : run.stats) run.summary.num_gradient_evaluations += st.n_leapfrog;
  return run;
}

void CmcChainRunner::Finish() {
  while (!all_done_) SafePoint(true);
}

}  // namespace homodyne::checkpoint
