#include "global/multistart.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/interrupt.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "global/latin_hypercube.h"
#include "parallel/collective.h"

namespace homodyne::global {
namespace {

// Runs fn and returns what it threw (null if nothing), for AgreeOnError.
template <typename Fn>
std::exception_ptr CaptureError(Fn&& fn) {
  try {
    fn();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace

MultiStartOptions MultiStartOptions::FromConfig(const config::MultiStart& m) {
  MultiStartOptions o;
  o.n_starts = m.n_starts;
  o.seed = static_cast<std::uint64_t>(m.seed);
  o.use_screening = m.use_screening;
  o.screen_keep_fraction = m.screen_keep_fraction;
  o.degeneracy_threshold = m.degeneracy_threshold;
  o.sampling = m.sampling_strategy;
  return o;
}

void MultiStartOptions::Validate() const {
  const auto key = [](std::string_view leaf) {
    return config::keys::Key(config::keys::kNlsqMultiStart, leaf);
  };
  if (n_starts < 1) ThrowBadInput("n_starts must be ≥ 1", {}, key("n_starts"));
  if (!(screen_keep_fraction > 0.0 && screen_keep_fraction <= 1.0)) {
    ThrowBadInput("screen_keep_fraction must be in (0, 1]", {}, key("screen_keep_fraction"));
  }
  if (!(degeneracy_threshold >= 0.0)) {
    ThrowBadInput("degeneracy_threshold must be ≥ 0", {}, key("degeneracy_threshold"));
  }
}

namespace {

// Every rank gets every entry: each slot is written by exactly one rank (the root of the
// group that owns it) and the others contribute 0, so the sum is exact.
void ShareSlots(const Comm& world, std::vector<double>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                world.get());
}

// This rank's place among the rank groups that share the starts.
struct GroupPlace {
  int groups = 1;     // rank groups, each fitting over its own ranks
  int group = 0;      // this rank's group
  bool root = false;  // this rank is its group's root (the one that writes shared slots)
};

// The configured start, then the sampled ones (same on every rank).
std::vector<StartOutcome> PlanStarts(const nlsq::XpcsFitSession& session,
                                     const MultiStartOptions& ms) {
  const int n_total = ms.n_starts + 1;
  std::vector<StartOutcome> starts(static_cast<std::size_t>(n_total));
  starts[0].start = session.x0();
  const auto lhs = ms.sampling == config::SamplingStrategy::kRandom
                       ? UniformPoints(ms.n_starts, session.lower(), session.upper(), ms.seed)
                       : LatinHypercube(ms.n_starts, session.lower(), session.upper(), ms.seed);
  for (int i = 1; i < n_total; ++i) {
    starts[static_cast<std::size_t>(i)].index = i;
    starts[static_cast<std::size_t>(i)].start = lhs[static_cast<std::size_t>(i - 1)];
  }
  return starts;
}

// Screening: one residual pass per start, starts spread over the groups. Records each
// start's χ² and returns the starts to solve, lowest χ² first.
std::vector<int> ScreenStarts(const Comm& world, nlsq::XpcsFitSession& session,
                              const MultiStartOptions& ms, const GroupPlace& place,
                              std::vector<StartOutcome>& starts) {
  const int n_total = static_cast<int>(starts.size());
  std::vector<double> start_chi2(static_cast<std::size_t>(n_total), 0.0);
  AgreeOnError(world, CaptureError([&] {
                 for (int i = place.group; i < n_total; i += place.groups) {
                   const double c = session.Chi2At(starts[static_cast<std::size_t>(i)].start);
                   if (place.root) {
                     start_chi2[static_cast<std::size_t>(i)] = std::isfinite(c) ? c : 1e300;
                   }
                 }
               }));
  ShareSlots(world, start_chi2);
  std::vector<int> order(static_cast<std::size_t>(n_total));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return start_chi2[static_cast<std::size_t>(a)] < start_chi2[static_cast<std::size_t>(b)];
  });
  int keep = n_total;
  if (ms.use_screening) {
    keep = std::min(n_total, std::max(3, static_cast<int>(ms.screen_keep_fraction * n_total)));
  }
  for (int i = 0; i < n_total; ++i) {
    starts[static_cast<std::size_t>(i)].start_chi2 = start_chi2[static_cast<std::size_t>(i)];
  }
  return {order.begin(), order.begin() + keep};
}

// One slot per start in the shared outcomes: solved (group + 1, 0 = not solved), usable,
// χ², iterations, then x.
constexpr std::size_t kOutcomeHead = 4;

// Solves the kept starts, round-robin over the groups, and returns every start's outcome
// slot (identical on every rank). With checkpoints (or resume) the groups meet after every
// round: the outcomes so far are shared, written to a "multistart" checkpoint, and a stop
// request is honoured there.
std::vector<double> SolveKeptStarts(const Comm& world, nlsq::XpcsFitSession& session,
                                    const std::vector<StartOutcome>& starts,
                                    const std::vector<int>& kept, const GroupPlace& place,
                                    const std::optional<checkpoint::CheckpointSettings>& ck,
                                    const Logger& logger) {
  const int n_total = static_cast<int>(starts.size());
  const std::size_t stride = kOutcomeHead + session.x0().size();
  std::vector<double> outcomes(static_cast<std::size_t>(n_total) * stride, 0.0);
  const bool rounds = ck && (ck->enabled || ck->resume);
  std::unique_ptr<checkpoint::CheckpointStore> store;
  if (rounds) {
    store = std::make_unique<checkpoint::CheckpointStore>(
        world, checkpoint::StoreOptions{ck->dir, "multistart", ck->keep_last},
        checkpoint::RunIdentity{ck->config_description, session.DataDescription()}, logger);
    if (ck->resume) {
      if (auto loaded = store->LoadNewest()) {
        const auto& saved = loaded->record.Doubles("multistart.outcomes");
        RunCollectively(world, [&] {
          if (saved.size() != outcomes.size()) {
            ThrowBadInput("the multistart checkpoint has another number of starts or parameters",
                          loaded->path.string(), "multistart.outcomes");
          }
        });
        outcomes = saved;
        int done = 0;
        for (int i = 0; i < n_total; ++i)
          done += outcomes[static_cast<std::size_t>(i) * stride] > 0;
        logger.Info("resuming multistart from {}: {} start(s) already solved",
                    loaded->path.string(), done);
      }
    }
  }
  const auto groups = static_cast<std::size_t>(place.groups);
  const std::size_t n_rounds = (kept.size() + groups - 1) / groups;
  std::int64_t solved_here = 0;
  for (std::size_t round = 0; round < n_rounds; ++round) {
    std::vector<double> fresh(outcomes.size(), 0.0);
    const std::size_t j = round * groups + static_cast<std::size_t>(place.group);
    // Every group ends every round with an agreement over the world (same round count).
    AgreeOnError(world, CaptureError([&] {
                   if (j >= kept.size()) return;
                   const auto i = static_cast<std::size_t>(kept[j]);
                   if (outcomes[i * stride] != 0.0) return;  // solved before an interruption
                   const nlsq::SolverSummary r = session.Solve(starts[i].start, false);
                   checkpoint::MaybeKill("multistart_start", ++solved_here);
                   if (!place.root) return;
                   double* o = fresh.data() + i * stride;
                   o[0] = 1.0 + place.group;
                   o[1] = r.IsUsable() && std::isfinite(r.final_chi2) ? 1.0 : 0.0;
                   o[2] = std::isfinite(r.final_chi2) ? r.final_chi2 : 0.0;
                   o[3] = r.iterations;
                   std::copy(r.x.begin(), r.x.end(), o + kOutcomeHead);
                 }));
    if (!rounds) {
      for (std::size_t k = 0; k < outcomes.size(); ++k) outcomes[k] += fresh[k];
      continue;
    }
    ShareSlots(world, fresh);
    for (std::size_t k = 0; k < outcomes.size(); ++k) outcomes[k] += fresh[k];
    const bool stop = ck->stop_on_signal && checkpoint::AgreeOnStop(world);
    if (ck->enabled || stop) {
      checkpoint::CheckpointRecord rec;
      rec.PutDoubles("multistart.outcomes", outcomes);
      if (stop && round + 1 < n_rounds) {  // the exit code promises a checkpoint
        const auto path = store->Write(rec);
        throw MarkAgreed(Error(ErrorKind::kCheckpointed, checkpoint::ResumeMessage(path.string())));
      }
      store->TryWrite(rec, ck->fatal_write_errors);
    }
  }
  if (!rounds) ShareSlots(world, outcomes);
  return outcomes;
}

// The shared outcome slots into the starts' records.
void UnpackOutcomes(const std::vector<double>& outcomes, std::size_t n,
                    std::vector<StartOutcome>& starts) {
  const std::size_t stride = kOutcomeHead + n;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const double* o = outcomes.data() + i * stride;
    StartOutcome& st = starts[i];
    st.solved = o[0] > 0.0;
    st.group = st.solved ? static_cast<int>(o[0]) - 1 : -1;
    st.usable = o[1] > 0.0;
    st.chi2 = o[2];
    st.iterations = static_cast<int>(o[3]);
    if (st.solved) st.x.assign(o + kOutcomeHead, o + kOutcomeHead + n);
  }
}

// Best and basins (identical on every rank: same shared numbers, same rules): the usable
// starts within degeneracy_threshold of the best χ², grouped by their physical parameters.
void FindBasins(const Comm& world, const nlsq::XpcsFitSession& session, const MultiStartOptions& ms,
                MultiStartSummary& s) {
  const int n_total = static_cast<int>(s.starts.size());
  for (int i = 0; i < n_total; ++i) {
    const auto& st = s.starts[static_cast<std::size_t>(i)];
    if (st.usable && (s.best < 0 || st.chi2 < s.starts[static_cast<std::size_t>(s.best)].chi2)) {
      s.best = i;
    }
  }
  if (s.best < 0) {
    RunCollectively(world, [] {
      throw Error(ErrorKind::kNumerical, "multistart: no start converged to a usable fit");
    });
  }
  const double best_chi2 = s.starts[static_cast<std::size_t>(s.best)].chi2;
  std::vector<int> near;
  for (int i = 0; i < n_total; ++i) {
    const auto& st = s.starts[static_cast<std::size_t>(i)];
    if (st.usable && st.chi2 <= best_chi2 * (1.0 + ms.degeneracy_threshold)) near.push_back(i);
  }
  std::stable_sort(near.begin(), near.end(), [&](int a, int b) {
    return s.starts[static_cast<std::size_t>(a)].chi2 < s.starts[static_cast<std::size_t>(b)].chi2;
  });
  const std::size_t n = session.x0().size();
  const std::size_t first_phys = n - static_cast<std::size_t>(session.num_physical());
  for (int i : near) {
    const auto& x = s.starts[static_cast<std::size_t>(i)].x;
    bool placed = false;
    for (Basin& b : s.basins) {
      const auto& seed = s.starts[static_cast<std::size_t>(b.members.front())].x;
      double d = 0.0;
      for (std::size_t p = first_phys; p < n; ++p) {
        d = std::max(d, std::abs(x[p] - seed[p]) / (session.upper()[p] - session.lower()[p]));
      }
      if (d < ms.basin_distance) {
        b.members.push_back(i);
        placed = true;
        break;
      }
    }
    if (!placed) s.basins.push_back({{i}, s.starts[static_cast<std::size_t>(i)].chi2});
  }
  s.degeneracy = s.basins.size() > 1;
}

}  // namespace

// Phases: groups and sessions → PlanStarts → ScreenStarts → SolveKeptStarts →
// UnpackOutcomes → FindBasins → group 0 polishes the best point and finishes.
nlsq::NlsqRunResult RunMultiStartFit(const Comm& world, const config::Config& cfg,
                                     const nlsq::NlsqRunOptions& options,
                                     const MultiStartOptions& ms, const Logger& logger,
                                     MultiStartSummary* summary) {
  ms.Validate();
  const int n_total = ms.n_starts + 1;
  GroupPlace place;
  place.groups = std::min(world.size(), n_total);
  if (ms.max_groups > 0) place.groups = std::min(place.groups, ms.max_groups);
  place.group = world.rank() % place.groups;
  const Comm group_comm = world.Split(place.group, world.rank());
  place.root = group_comm.is_root();
  logger.Info("multistart: {} Latin-hypercube starts + the configured start on {} rank group(s)",
              ms.n_starts, place.groups);

  // Each group loads the data over its own ranks.
  nlsq::NlsqRunOptions quiet = options;
  quiet.print_progress = false;
  quiet.checkpoints.reset();  // multistart progress is not checkpointed (docs/checkpoints.md)
  // Errors inside a group are agreed on by that group only; each group phase therefore
  // ends with an agreement over the world, or the other groups would wait forever.
  // The session keeps a reference to its logger: it must outlive the session (a
  // `cond ? logger : Logger::Silent()` temporary would dangle; AddressSanitizer found it).
  const Logger silent = Logger::Silent();
  const Logger& session_logger = place.group == 0 ? logger : silent;
  std::optional<nlsq::XpcsFitSession> session_holder;
  AgreeOnError(
      world, CaptureError([&] { session_holder.emplace(group_comm, cfg, quiet, session_logger); }));
  nlsq::XpcsFitSession& session = *session_holder;

  MultiStartSummary s;
  s.groups = place.groups;
  s.parameter_names = session.parameter_names();
  s.starts = PlanStarts(session, ms);
  const std::vector<int> kept = ScreenStarts(world, session, ms, place, s.starts);
  const std::vector<double> outcomes =
      SolveKeptStarts(world, session, s.starts, kept, place, options.checkpoints, logger);
  UnpackOutcomes(outcomes, session.x0().size(), s.starts);
  FindBasins(world, session, ms, s);
  logger.Info("{}", s.Table());
  if (s.degeneracy) {
    logger.Warn(
        "multistart: {} distinct basins within {:.0f}% of the best chi2: the parameters are "
        "degenerate for these data (see nlsq/multistart.json)",
        s.basins.size(), 100.0 * ms.degeneracy_threshold);
  }

  // The final answer: group 0 polishes the best point (a few iterations at most) and
  // computes uncertainties and the report there.
  nlsq::NlsqRunResult result;
  if (place.group == 0) {
    const nlsq::SolverSummary polished =
        session.Solve(s.starts[static_cast<std::size_t>(s.best)].x, options.print_progress);
    result = session.Finish(polished);
    for (const auto& w : result.report.quality_warnings) logger.Warn("{}", w);
  }
  if (summary != nullptr) *summary = s;
  return result;
}

std::string MultiStartSummary::Table() const {
  std::string out = fmt::format("multistart results ({} group(s)):\n", groups);
  out += fmt::format("  {:>5} {:>6} {:>16} {:>16} {:>6} {:>8}\n", "start", "group", "start chi2",
                     "final chi2", "iters", "status");
  for (const auto& st : starts) {
    if (!st.solved) {
      out += fmt::format("  {:>5} {:>6} {:>16.8e} {:>16} {:>6} {:>8}\n", st.index, "-",
                         st.start_chi2, "-", "-", "screened");
      continue;
    }
    out += fmt::format("  {:>5} {:>6} {:>16.8e} {:>16.8e} {:>6} {:>8}{}\n", st.index, st.group,
                       st.start_chi2, st.chi2, st.iterations, st.usable ? "ok" : "failed",
                       st.index == best ? "  <- best" : "");
  }
  out += fmt::format("  basins within the degeneracy threshold: {}", basins.size());
  return out;
}

std::string MultiStartSummary::ToJson() const {
  nlohmann::json j;
  j["groups"] = groups;
  j["best_start"] = best;
  j["degeneracy_detected"] = degeneracy;
  j["parameter_names"] = parameter_names;
  for (const auto& st : starts) {
    nlohmann::json e = {{"index", st.index},   {"start", st.start}, {"start_chi2", st.start_chi2},
                        {"solved", st.solved}, {"group", st.group}, {"usable", st.usable}};
    if (st.solved) {
      e["chi2"] = st.chi2;
      e["iterations"] = st.iterations;
      e["x"] = st.x;
    }
    j["starts"].push_back(e);
  }
  for (const auto& b : basins)
    j["basins"].push_back({{"members", b.members}, {"best_chi2", b.best_chi2}});
  return j.dump(2) + "\n";
}

}  // namespace homodyne::global
