#include "nlsq/noise_level.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {
namespace {

// The histogram grid: 64 bins per octave on [2^kMinExponent, 2^(kMaxExponent + 1)).
constexpr int kMinExponent = -50;
constexpr int kMaxExponent = 16;
constexpr int kMantissaBits = 6;
constexpr int kBinsPerOctave = 1 << kMantissaBits;
constexpr int kGridBins = (kMaxExponent - kMinExponent + 1) * kBinsPerOctave;
// The rows a third difference spans beyond its base row.
constexpr int kSpan = 3;
constexpr double kThirdDifferenceNorm = 4.47213595499957939282;  // √(1 + 9 + 9 + 1)
constexpr double kHalfNormalMedian = 0.67448975019608174320;     // Φ⁻¹(3/4)
constexpr double kTrimAt = 3.0;                                  // in units of σ₀

// [lo, hi) of grid bin g (1-based in the histogram: 0 is below the grid).
void BinRange(int g, double& lo, double& hi) {
  const int octave = (g - 1) / kBinsPerOctave;
  const int m = (g - 1) % kBinsPerOctave;
  const int e = kMinExponent + octave;
  lo = std::ldexp(1.0 + static_cast<double>(m) / kBinsPerOctave, e);
  hi = std::ldexp(1.0 + static_cast<double>(m + 1) / kBinsPerOctave, e);
}

// E[Z² | |Z| ≤ c] of a standard normal Z.
double TruncatedSecondMoment(double c) {
  const double density = std::exp(-0.5 * c * c) / std::sqrt(2.0 * std::numbers::pi);
  return 1.0 - 2.0 * c * density / std::erf(c / std::sqrt(2.0));
}

// One angle's last rows (oldest first) while the rank's rows pass by, and the histogram of
// the third differences whose base row it has seen.
struct AngleState {
  std::int64_t first_row = -1;  // row of rows.front()
  std::vector<std::vector<double>> rows;
  std::vector<std::vector<double>> head;  // the rank's first kSpan rows (to send back)
  double max_abs = 0.0;
};

class NoisePass {
 public:
  explicit NoisePass(int n_angles)
      : state_(static_cast<std::size_t>(n_angles)),
        counts_(static_cast<std::size_t>(n_angles) * static_cast<std::size_t>(NoiseHistogramBins()),
                0) {}

  // Row `row` of angle k (its columns row+1 … last, in order).
  void Feed(int k, std::int64_t row, std::span<const double> values, bool own) {
    AngleState& a = state_[static_cast<std::size_t>(k)];
    if (own) {
      if (a.head.size() < static_cast<std::size_t>(kSpan))
        a.head.emplace_back(values.begin(), values.end());
      for (double v : values) {
        if (std::isfinite(v)) a.max_abs = std::max(a.max_abs, std::abs(v));
      }
    }
    if (a.rows.empty()) {
      a.first_row = row;
    } else {
      HOMODYNE_CHECK(a.first_row + static_cast<std::int64_t>(a.rows.size()) == row,
                     "the noise pass sees an angle's rows in order");
    }
    if (a.rows.size() == static_cast<std::size_t>(kSpan)) {
      const std::vector<double>& r0 = a.rows[0];
      const std::vector<double>& r1 = a.rows[1];
      const std::vector<double>& r2 = a.rows[2];
      std::int64_t* hist = counts_.data() + static_cast<std::size_t>(k) *
                                                static_cast<std::size_t>(NoiseHistogramBins());
      for (std::size_t p = 0; p < values.size(); ++p) {
        const double d = r0[p] - 3.0 * r1[p] + 3.0 * r2[p] - values[p];
        if (std::isfinite(d)) ++hist[NoiseHistogramBin(std::abs(d))];
      }
      a.rows.erase(a.rows.begin());
      ++a.first_row;
    }
    a.rows.emplace_back(values.begin(), values.end());
  }

  AngleState& angle(int k) { return state_[static_cast<std::size_t>(k)]; }
  std::vector<std::int64_t>& counts() { return counts_; }

 private:
  std::vector<AngleState> state_;
  std::vector<std::int64_t> counts_;
};

bool HasRows(const PartitionPlan& plan, int rank) {
  return plan.first_block(rank) < plan.end_block(rank);
}

// The rows a rank's last rows need come from the ranks after it: in round h each rank with
// rows sends its (h+1)-th row of the continuing sequence (its own rows, then what it received)
// to the previous rank with rows, and receives the next one from the following rank.
std::vector<std::vector<double>> ExchangeLookahead(const Comm& comm, const PartitionPlan& plan,
                                                   NoisePass& pass, int n_angles) {
  const int rank = comm.rank();
  std::vector<std::vector<double>> lookahead;  // per round: every angle's row, concatenated
  if (!HasRows(plan, rank)) return lookahead;
  int prev = MPI_PROC_NULL, next = MPI_PROC_NULL;
  for (int r = rank - 1; r >= 0; --r) {
    if (HasRows(plan, r)) {
      prev = r;
      break;
    }
  }
  for (int r = rank + 1; r < plan.n_ranks(); ++r) {
    if (HasRows(plan, r)) {
      next = r;
      break;
    }
  }
  const std::int64_t last = plan.last();
  const std::int64_t r0 = plan.block_row_begin(plan.first_block(rank));
  const std::int64_t r1 = plan.block_row_end(plan.end_block(rank) - 1);
  const std::int64_t own = r1 - r0;
  const auto row_values = [&](std::int64_t row) {
    return static_cast<std::size_t>(n_angles) * static_cast<std::size_t>(last - row);
  };
  for (int h = 0; h < kSpan; ++h) {
    std::vector<double> send;
    const std::int64_t send_row = r0 + h;
    const bool sends = prev != MPI_PROC_NULL && send_row < last;
    if (sends) {
      if (h < own) {
        for (int k = 0; k < n_angles; ++k) {
          const auto& v = pass.angle(k).head[static_cast<std::size_t>(h)];
          send.insert(send.end(), v.begin(), v.end());
        }
      } else {
        send = lookahead[static_cast<std::size_t>(h - own)];
      }
      HOMODYNE_CHECK(send.size() == row_values(send_row), "noise lookahead row size");
    }
    const std::int64_t recv_row = r1 + h;
    const bool receives = next != MPI_PROC_NULL && recv_row < last;
    std::vector<double> recv(receives ? row_values(recv_row) : 0);
    HOMODYNE_CHECK(send.size() < static_cast<std::size_t>(INT32_MAX) &&
                       recv.size() < static_cast<std::size_t>(INT32_MAX),
                   "noise lookahead row too large for one message");
    MPI_Sendrecv(send.data(), static_cast<int>(send.size()), MPI_DOUBLE,
                 sends ? prev : MPI_PROC_NULL, 7402, recv.data(), static_cast<int>(recv.size()),
                 MPI_DOUBLE, receives ? next : MPI_PROC_NULL, 7402, comm.get(), MPI_STATUS_IGNORE);
    // Once nothing arrives (the last rank, or the last row) nothing arrives later either; the
    // rank may still have own rows to send.
    if (receives) lookahead.push_back(std::move(recv));
  }
  return lookahead;
}

}  // namespace

bool NoiseLevel::all_measurable() const {
  return !angles.empty() && std::all_of(angles.begin(), angles.end(),
                                        [](const AngleNoise& a) { return a.measurable; });
}

int NoiseHistogramBins() { return kGridBins + 2; }

int NoiseHistogramBin(double a) {
  static_assert(kMinExponent == -50 && kMaxExponent == 16, "the grid's edges below");
  if (!(a >= 0x1p-50)) return 0;
  if (!(a < 0x1p17)) return kGridBins + 1;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &a, sizeof(bits));
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  const int mantissa = static_cast<int>((bits >> (52 - kMantissaBits)) & (kBinsPerOctave - 1));
  return 1 + (exponent - kMinExponent) * kBinsPerOctave + mantissa;
}

double NoiseFromHistogram(std::span<const std::int64_t> counts, double norm) {
  HOMODYNE_CHECK(static_cast<int>(counts.size()) == NoiseHistogramBins(), "noise histogram size");
  std::int64_t n = 0;
  for (std::int64_t c : counts) n += c;
  if (n == 0) return 0.0;
  // The median of |d|, linear within its bin.
  const double target = 0.5 * static_cast<double>(n);
  std::int64_t cum = counts[0];
  if (static_cast<double>(cum) >= target) return 0.0;  // below the grid: round-off
  double median = 0.0;
  bool found = false;
  for (int g = 1; g <= kGridBins && !found; ++g) {
    const std::int64_t c = counts[static_cast<std::size_t>(g)];
    if (c > 0 && static_cast<double>(cum + c) >= target) {
      double lo = 0.0, hi = 0.0;
      BinRange(g, lo, hi);
      median = lo + (hi - lo) * (target - static_cast<double>(cum)) / static_cast<double>(c);
      found = true;
    }
    cum += c;
  }
  if (!found) return 0.0;  // above the grid
  const double sigma0 = median / (norm * kHalfNormalMedian);
  // The mean of d² over |d| ≤ cut (values uniform within a bin), counting those below the
  // grid as 0.
  const double cut = kTrimAt * sigma0 * norm;
  double sum = 0.0, kept = static_cast<double>(counts[0]);
  for (int g = 1; g <= kGridBins; ++g) {
    const std::int64_t c = counts[static_cast<std::size_t>(g)];
    if (c == 0) continue;
    double lo = 0.0, hi = 0.0;
    BinRange(g, lo, hi);
    if (lo >= cut) break;
    const double top = std::min(hi, cut);
    const double share = static_cast<double>(c) * (top - lo) / (hi - lo);
    sum += share * (lo * lo + lo * top + top * top) / 3.0;
    kept += share;
  }
  if (!(kept > 0.0)) return 0.0;
  return std::sqrt(sum / kept / TruncatedSecondMoment(kTrimAt)) / norm;
}

NoiseLevel EstimateNoiseOverWindows(const Comm& comm, const io::LocalData& layout,
                                    const std::function<void(const ScalingWindowVisit&)>& windows) {
  const int n_angles = static_cast<int>(layout.meta.n_angles());
  const PartitionPlan& plan = layout.plan;
  NoisePass pass(n_angles);
  RunCollectively(comm, [&] {
    windows([&](std::span<const io::LocalTile> tiles, std::span<const double> values) {
      for (const io::LocalTile& lt : tiles) {
        HOMODYNE_CHECK(
            lt.tile.col_begin == lt.tile.row + 1 && lt.tile.row + lt.tile.count == plan.last(),
            "the noise pass needs whole rows of the upper triangle");
        pass.Feed(lt.tile.angle, lt.tile.row,
                  values.subspan(lt.offset, static_cast<std::size_t>(lt.tile.count)), true);
      }
    });
  });
  // Not under RunCollectively: its checks are invariants, and the exchange is point to point.
  const std::vector<std::vector<double>> lookahead =
      plan.total_points() > 0 ? ExchangeLookahead(comm, plan, pass, n_angles)
                              : std::vector<std::vector<double>>{};
  if (HasRows(plan, comm.rank())) {
    const std::int64_t r1 = plan.block_row_end(plan.end_block(comm.rank()) - 1);
    for (std::size_t h = 0; h < lookahead.size(); ++h) {
      const std::int64_t row = r1 + static_cast<std::int64_t>(h);
      const auto count = static_cast<std::size_t>(plan.last() - row);
      for (int k = 0; k < n_angles; ++k) {
        pass.Feed(k, row,
                  std::span<const double>(lookahead[h])
                      .subspan(static_cast<std::size_t>(k) * count, count),
                  false);
      }
    }
  }
  std::vector<std::int64_t>& counts = pass.counts();
  MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_INT64_T, MPI_SUM,
                comm.get());
  std::vector<double> max_abs(static_cast<std::size_t>(n_angles));
  for (int k = 0; k < n_angles; ++k) max_abs[static_cast<std::size_t>(k)] = pass.angle(k).max_abs;
  MPI_Allreduce(MPI_IN_PLACE, max_abs.data(), n_angles, MPI_DOUBLE, MPI_MAX, comm.get());

  NoiseLevel out;
  const auto bins = static_cast<std::size_t>(NoiseHistogramBins());
  for (int k = 0; k < n_angles; ++k) {
    const std::span<const std::int64_t> hist(counts.data() + static_cast<std::size_t>(k) * bins,
                                             bins);
    AngleNoise a;
    for (std::int64_t c : hist) a.differences += c;
    a.sigma = NoiseFromHistogram(hist, kThirdDifferenceNorm);
    const double floor = kNoiseRoundOffFraction * max_abs[static_cast<std::size_t>(k)];
    if (a.differences < kMinNoiseDifferences) {
      a.reason =
          fmt::format("{} third differences, fewer than {}", a.differences, kMinNoiseDifferences);
    } else if (!(a.sigma > floor) || !std::isfinite(a.sigma)) {
      a.reason = fmt::format("level {:.3g} is round-off (below {:g} of the largest |c2|)", a.sigma,
                             kNoiseRoundOffFraction);
    } else {
      a.measurable = true;
    }
    if (!a.measurable) a.sigma = 0.0;
    out.angles.push_back(std::move(a));
  }
  return out;
}

NoiseLevel EstimateNoise(const Comm& comm, const io::LocalData& local) {
  return EstimateNoiseOverWindows(
      comm, local, [&](const ScalingWindowVisit& visit) { visit(local.tiles, local.values); });
}

NoiseLevel EstimateNoiseStreaming(const Comm& comm, const io::LocalData& layout,
                                  BlockStream& stream) {
  return EstimateNoiseOverWindows(comm, layout, [&](const ScalingWindowVisit& visit) {
    const BlockStream::PassTimer pass(stream);
    for (int w = 0; w < stream.num_windows(); ++w) {
      const StreamWindow& win = stream.Load(w);
      visit(win.tiles, win.values);
    }
  });
}

}  // namespace homodyne::nlsq
