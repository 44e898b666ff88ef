#include "nlsq/streaming_scaling.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "config/key_paths.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "parallel/collective.h"
#include "parallel/radix_select.h"

namespace homodyne::nlsq {
namespace {

// Runs passes until every query is resolved; `pass` adds this rank's values.
template <typename PassFn>
void RunPasses(const Comm& comm, RadixSelect& select, PassFn&& pass) {
  while (!select.done()) {
    RunCollectively(comm, [&] {
      const FaultScope scaling("scaling");  // job rank: comm may be a multistart group
      pass();
    });
    select.FinishPass(comm);
  }
}

struct PercentileQuery {
  PercentileRanks ranks;
  int a = -1;
  int b = -1;
};

PercentileQuery AskPercentile(RadixSelect& select, int set, double p) {
  PercentileQuery q;
  q.ranks = PercentileRanksOf(select.count(set), p);
  q.a = select.AddQuery(set, q.ranks.lo);
  if (!q.ranks.single) q.b = select.AddQuery(set, q.ranks.lo + 1);
  return q;
}

double Answer(const RadixSelect& select, const PercentileQuery& q) {
  return CombinePercentile(q.ranks, select.result(q.a), q.ranks.single ? 0.0 : select.result(q.b));
}

// The lag grid and the points rank 0 adds to the tiles (whose pairs are counted twice):
// the corrected diagonal once (frames 1… on the fit grid, 0… on the full matrix), and under
// kFullMatrix frame 0's row (its pairs (0, j) and (j, 0), j ≥ 1, twice).
struct PoolShape {
  std::vector<double> t;
  bool first_row = false;  // kFullMatrix
  std::size_t FirstDiagonal() const { return first_row ? 0 : 1; }
};

PoolShape PoolShapeOf(const io::LocalData& local, ScalingPool pool) {
  if (pool == ScalingPool::kFitGrid) return {local.meta.t, false};
  HOMODYNE_CHECK(local.first_row.size() == local.meta.n_angles(),
                 "the full-matrix scaling estimate needs the first rows (LoadOptions::first_row)");
  return {model::TwoComponentLagTimes(local.meta.n_frames, local.meta.dt), true};
}

// Lag percentiles (p80, p20) of the pooled points: the rank's tiles of angle 0 (weight 2)
// and, on rank 0, frame 0's row (weight 2) and the zero lags of the diagonal.
std::pair<double, double> LagPercentiles(const Comm& comm, const io::LocalData& local,
                                         const PoolShape& shape) {
  const std::vector<double>& t = shape.t;
  RadixSelect select(1);
  bool first = true;
  PercentileQuery q80, q20;
  auto pass = [&] {
    for (const auto& lt : local.tiles) {
      if (lt.tile.angle != 0) continue;
      const auto i = static_cast<std::size_t>(lt.tile.row);
      for (std::int64_t c = 0; c < lt.tile.count; ++c) {
        select.Add(0, std::abs(t[i] - t[static_cast<std::size_t>(lt.tile.col_begin + c)]), 2);
      }
    }
    if (comm.is_root()) {
      for (std::size_t j = 1; shape.first_row && j < t.size(); ++j) {
        select.Add(0, std::abs(t[0] - t[j]), 2);
      }
      for (std::size_t m = shape.FirstDiagonal(); m < t.size(); ++m) select.Add(0, 0.0, 1);
    }
  };
  while (first || !select.done()) {
    pass();
    select.FinishPass(comm);
    if (first) {
      first = false;
      q80 = AskPercentile(select, 0, 80.0);
      q20 = AskPercentile(select, 0, 20.0);
    }
  }
  return {Answer(select, q80), Answer(select, q20)};
}

// The queries of each angle after the first pass: its offset and ceiling percentiles, or the
// fallback for too few points. The counts are summed over the ranks: every rank takes the
// same branch, and under Q95 every rank throws the same (agreed) error.
struct AngleQueries {
  bool fallback = false;
  PercentileQuery offset, ceiling;
};

std::string AngleName(const std::vector<double>& phi, int k) {
  return fmt::format("angle {} (phi = {:g} deg)", k, phi[static_cast<std::size_t>(k)]);
}

std::vector<AngleQueries> AskAngleQueries(RadixSelect& select, int n_angles,
                                          model::ScalingQuantiles rule, bool first_row,
                                          const std::string& file, const std::vector<double>& phi) {
  const model::ValuePercentiles levels = model::ValuePercentilesOf(rule);
  std::vector<AngleQueries> queries(static_cast<std::size_t>(n_angles));
  for (int k = 0; k < n_angles; ++k) {
    AngleQueries& a = queries[static_cast<std::size_t>(k)];
    const std::int64_t count = select.count(3 * k);
    if (count < model::kMinScalingPoints) {
      if (rule == model::ScalingQuantiles::kQ95) {
        throw MarkAgreed(Error(
            ErrorKind::kBadInput,
            fmt::format("{} ({}; this estimate holds the scaling of two_component's "
                        "constant per-angle mode and of its two-stage path's stage 1)",
                        model::FewScalingPointsMessage(count, AngleName(phi, k)),
                        first_row ? "it pools the full matrix, N^2 points per angle for N "
                                    "selected frames: select at least 10 frames"
                                  : "it pools the fit grid, n_t^2 points per angle, n_t = the "
                                    "selected frames - 1: select at least 11 frames"),
            {file, config::keys::FrameWindowKey(), -1}));
      }
      a.fallback = true;
      continue;
    }
    const int far = select.count(3 * k + 1) >= 10 ? 3 * k + 1 : 3 * k;
    const int near = select.count(3 * k + 2) >= 10 ? 3 * k + 2 : 3 * k;
    a.offset = AskPercentile(select, far, levels.low);
    a.ceiling = AskPercentile(select, near, levels.high);
  }
  return queries;
}

// Rank 0's points beside the tiles: frame 0's row (weight 2; checked finite by the loader)
// and the diagonal's (weight 1).
template <typename Add>
void AddRootPoints(const io::LocalData& local, const PoolShape& shape, Add& add) {
  const std::vector<double>& t = shape.t;
  for (int k = 0; k < static_cast<int>(local.meta.n_angles()); ++k) {
    const auto uk = static_cast<std::size_t>(k);
    for (std::size_t j = 1; shape.first_row && j < t.size(); ++j) {
      add(k, local.first_row[uk][j], std::abs(t[0] - t[j]), 2);
    }
    const auto& diag = local.diagonal[uk];
    for (std::size_t m = shape.FirstDiagonal(); m < diag.size(); ++m) add(k, diag[m], 0.0, 1);
  }
}

// At most this many values (16 bytes each, 16 MiB) are kept for a replay, whatever the window:
// in core the window is the whole data, and a quarter of its points would be a copy of it.
constexpr std::size_t kMaxReplayValues = std::size_t{1} << 20;

// A value kept for the replay of a pass (EstimateInitialScalingOverWindows): its key and the
// sets it joins. 16 bytes: the buffer is held on top of the fit's memory while it lives.
struct Candidate {
  std::uint64_t key;
  std::int32_t angle;
  std::uint16_t weight;
  bool far, near;  // in the angle's far / near set
};
static_assert(sizeof(Candidate) == 16);

}  // namespace

std::vector<model::ScalingEstimate> EstimateInitialScalingStreaming(
    const Comm& comm, const io::LocalData& local, BlockStream& stream,
    const model::ScalingBounds& bounds, model::ScalingQuantiles rule, ScalingPool pool) {
  return EstimateInitialScalingOverWindows(
      comm, local,
      [&](const ScalingWindowVisit& visit) {
        const BlockStream::PassTimer pass(stream);
        for (int w = 0; w < stream.num_windows(); ++w) {
          const StreamWindow& win = stream.Load(w);
          visit(win.tiles, win.values);
        }
      },
      bounds, rule, pool);
}

// Each pass after the first keeps the values some query still wants (RadixSelect::AddKey)
// while they fit in a quarter of the largest window's points (an entry is 2 doubles, so half
// the window buffer's memory at most) and in kMaxReplayValues; once a pass kept them all, the
// remaining passes replay them instead of reading the data again — on every rank alike, so that
// every rank makes the same reads (agreed after each pass). The first pass fixes sign and
// exponent and, for values around 1, the next 11 bits; the second then wants about a
// thousandth of the values (the prefix holds 10 bits of the mantissa), few enough to keep: 2
// reads instead of 6 when the queries land around 1, as c2's do (3 otherwise).
std::vector<model::ScalingEstimate> EstimateInitialScalingOverWindows(
    const Comm& comm, const io::LocalData& local,
    const std::function<void(const ScalingWindowVisit&)>& windows,
    const model::ScalingBounds& bounds, model::ScalingQuantiles rule, ScalingPool pool) {
  const int n_angles = static_cast<int>(local.meta.n_angles());
  std::vector<model::ScalingEstimate> out;
  if (n_angles == 0) return out;
  const PoolShape shape = PoolShapeOf(local, pool);
  // Plain variables: clang 14 does not let the lambdas below capture structured bindings.
  const auto percentiles = LagPercentiles(comm, local, shape);
  const double hi = percentiles.first, lo = percentiles.second;
  const std::vector<double>& t = shape.t;
  // Sets per angle k: 3k all points, 3k+1 far (lag ≥ hi), 3k+2 near (lag ≤ lo).
  // c2 values lie around 1: their first two digits come from the first pass.
  RadixSelect select(3 * n_angles, 1.0);
  std::vector<std::int64_t> bad(static_cast<std::size_t>(n_angles), 0);
  // Each value's key once for its sets; true when a query of one of them wants the value
  // (RadixSelect::AddKey), the replay's test.
  auto add_sets = [&](int k, std::uint64_t key, bool far, bool near, std::int64_t w) {
    bool wanted = select.AddKey(3 * k, key, w);
    if (far) wanted = select.AddKey(3 * k + 1, key, w) || wanted;
    if (near) wanted = select.AddKey(3 * k + 2, key, w) || wanted;
    return wanted;
  };
  auto add = [&](int k, double v, double lag, std::int64_t w) {
    add_sets(k, RadixSelect::KeyOf(v), lag >= hi, lag <= lo, w);
  };
  std::vector<Candidate> candidates;
  bool replay = false;
  bool kept = false;  // this pass kept every wanted value of the rank
  std::size_t max_candidates = 0;
  auto pass = [&] {
    const bool check = !select.first_pass_done();
    if (replay) {
      for (const Candidate& c : candidates) add_sets(c.angle, c.key, c.far, c.near, c.weight);
    } else {
      bool keep = select.first_pass_done();
      candidates.clear();
      windows([&](std::span<const io::LocalTile> tiles, std::span<const double> values) {
        std::size_t points = 0;
        for (const io::LocalTile& lt : tiles) points += static_cast<std::size_t>(lt.tile.count);
        max_candidates = std::min(std::max(max_candidates, points / 4), kMaxReplayValues);
        for (const io::LocalTile& lt : tiles) {
          const int k = lt.tile.angle;
          const auto i = static_cast<std::size_t>(lt.tile.row);
          const double* v = values.data() + lt.offset;
          for (std::int64_t c = 0; c < lt.tile.count; ++c) {
            if (!std::isfinite(v[c])) {
              if (check) ++bad[static_cast<std::size_t>(k)];
              continue;
            }
            const double lag = std::abs(t[i] - t[static_cast<std::size_t>(lt.tile.col_begin + c)]);
            const std::uint64_t key = RadixSelect::KeyOf(v[c]);
            const bool far = lag >= hi, near = lag <= lo;
            if (add_sets(k, key, far, near, 2) && keep) {
              if (candidates.size() < max_candidates) {
                candidates.push_back({key, k, 2, far, near});
              } else {
                keep = false;
                std::vector<Candidate>().swap(candidates);
              }
            }
          }
        }
      });
      kept = keep;
    }
    if (comm.is_root()) AddRootPoints(local, shape, add);
  };
  // First pass: counts (and the finite check), then the queries each angle needs.
  RunCollectively(comm, [&] {
    const FaultScope scaling("scaling");
    pass();
  });
  io::AgreeOnNonFinite(comm, local.meta, bad);
  select.FinishPass(comm);
  const std::vector<double> phi = local.meta.phi_values();
  const std::vector<AngleQueries> queries =
      AskAngleQueries(select, n_angles, rule, shape.first_row, local.meta.file, phi);
  while (!select.done()) {
    kept = false;
    RunCollectively(comm, [&] {
      const FaultScope scaling("scaling");  // job rank: comm may be a multistart group
      pass();
    });
    if (!replay) {
      int all = kept ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm.get());
      replay = all != 0;
      if (!replay) std::vector<Candidate>().swap(candidates);
    }
    select.FinishPass(comm);
  }
  for (int k = 0; k < n_angles; ++k) {
    const AngleQueries& a = queries[static_cast<std::size_t>(k)];
    out.push_back(a.fallback ? model::ScalingFromFewPoints(rule, select.count(3 * k),
                                                           AngleName(phi, k), bounds)
                             : model::CombineScaling(rule, Answer(select, a.offset),
                                                     Answer(select, a.ceiling), bounds));
  }
  return out;
}

}  // namespace homodyne::nlsq
