#include "cmc/bimodality.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>

#include "nuts/diagnostics.h"

namespace homodyne::cmc {
namespace {

constexpr int kMaxIterations = 200;
constexpr double kRelTolerance = 1e-10;
constexpr double kVarianceFloorFraction = 1e-12;  // of the sample variance

double NormalLogPdf(double x, double mean, double variance) {
  const double d = x - mean;
  return -0.5 * (std::log(2.0 * std::numbers::pi * variance) + d * d / variance);
}

// EM from the split of the sorted values at `split` (a fraction): each side's moments.
TwoGaussians Em(const std::vector<double>& sorted, double split, double floor) {
  const std::size_t n = sorted.size();
  const auto k =
      std::clamp<std::size_t>(static_cast<std::size_t>(split * static_cast<double>(n)), 2, n - 2);
  TwoGaussians m;
  for (int c = 0; c < 2; ++c) {
    const std::size_t b = c == 0 ? 0 : k, e = c == 0 ? k : n;
    double s = 0.0, s2 = 0.0;
    for (std::size_t i = b; i < e; ++i) s += sorted[i];
    const double mu = s / static_cast<double>(e - b);
    for (std::size_t i = b; i < e; ++i) s2 += (sorted[i] - mu) * (sorted[i] - mu);
    m.weight[c] = static_cast<double>(e - b) / static_cast<double>(n);
    m.mean[c] = mu;
    m.variance[c] = std::max(s2 / static_cast<double>(e - b), floor);
  }
  std::vector<double> r(n);  // responsibility of component 1
  double previous = -HUGE_VAL;
  for (int it = 0; it < kMaxIterations; ++it) {
    double ll = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double a = std::log(m.weight[0]) + NormalLogPdf(sorted[i], m.mean[0], m.variance[0]);
      const double b = std::log(m.weight[1]) + NormalLogPdf(sorted[i], m.mean[1], m.variance[1]);
      const double top = std::max(a, b);
      const double lse = top + std::log(std::exp(a - top) + std::exp(b - top));
      r[i] = std::exp(b - lse);
      ll += lse;
    }
    m.log_likelihood = ll;
    double w1 = 0.0, s1 = 0.0, s0 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      w1 += r[i];
      s1 += r[i] * sorted[i];
      s0 += (1.0 - r[i]) * sorted[i];
    }
    const double w0 = static_cast<double>(n) - w1;
    if (w0 < 1.0 || w1 < 1.0) break;  // a component has collapsed: keep the last estimate
    m.mean[0] = s0 / w0;
    m.mean[1] = s1 / w1;
    double v0 = 0.0, v1 = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      v0 += (1.0 - r[i]) * (sorted[i] - m.mean[0]) * (sorted[i] - m.mean[0]);
      v1 += r[i] * (sorted[i] - m.mean[1]) * (sorted[i] - m.mean[1]);
    }
    m.variance[0] = std::max(v0 / w0, floor);
    m.variance[1] = std::max(v1 / w1, floor);
    m.weight[0] = w0 / static_cast<double>(n);
    m.weight[1] = w1 / static_cast<double>(n);
    if (std::abs(ll - previous) <= kRelTolerance * std::abs(ll)) break;
    previous = ll;
  }
  if (m.mean[0] > m.mean[1]) {
    std::swap(m.weight[0], m.weight[1]);
    std::swap(m.mean[0], m.mean[1]);
    std::swap(m.variance[0], m.variance[1]);
  }
  return m;
}

}  // namespace

TwoGaussians FitTwoGaussians(std::span<const double> x) {
  std::vector<double> v;
  for (double value : x) {
    if (std::isfinite(value)) v.push_back(value);
  }
  TwoGaussians best;
  double mean = 0.0, var = 0.0;
  for (double value : v) mean += value;
  mean /= std::max<double>(1.0, static_cast<double>(v.size()));
  for (double value : v) var += (value - mean) * (value - mean);
  var /= std::max<double>(1.0, static_cast<double>(v.size()));
  if (v.size() < 4 || !(var > 0.0)) {
    best.weight[0] = 1.0;
    best.mean[0] = best.mean[1] = mean;
    best.variance[0] = best.variance[1] = var;
    return best;
  }
  std::sort(v.begin(), v.end());
  best.log_likelihood = -HUGE_VAL;
  for (const double split : {0.25, 0.5, 0.75}) {
    const TwoGaussians m = Em(v, split, kVarianceFloorFraction * var);
    if (m.log_likelihood > best.log_likelihood) best = m;
  }
  return best;
}

bool IsBimodal(const TwoGaussians& m, double min_weight, double min_separation) {
  const double centre = std::max(std::abs(0.5 * (m.mean[0] + m.mean[1])), 1e-10);
  return std::min(m.weight[0], m.weight[1]) > min_weight &&
         std::abs(m.mean[1] - m.mean[0]) / centre > min_separation;
}

namespace {

// log Φ(t), with the tail's asymptotic series where erfc underflows.
double LogNormalCdf(double t) {
  if (t > -20.0) return std::log(0.5 * std::erfc(-t / std::numbers::sqrt2));
  const double t2 = t * t;
  return -0.5 * t2 - std::log(-t) - 0.5 * std::log(2.0 * std::numbers::pi) +
         std::log1p(-1.0 / t2 + 3.0 / (t2 * t2));
}

// −log-likelihood of standardised values z under the skew-normal p = (ξ, log ω, α).
double SkewNormalCost(const std::vector<double>& z, const std::array<double, 3>& p) {
  constexpr double kMaxShape = 100.0;  // the likelihood is flat beyond: a half-normal
  if (!(std::abs(p[2]) <= kMaxShape) || !(std::abs(p[1]) <= 20.0)) return HUGE_VAL;
  const double inv = std::exp(-p[1]);
  double cost = static_cast<double>(z.size()) *
                (p[1] + 0.5 * std::log(2.0 * std::numbers::pi) - std::numbers::ln2);
  for (double v : z) {
    const double u = (v - p[0]) * inv;
    cost += 0.5 * u * u - LogNormalCdf(p[2] * u);
  }
  return cost;
}

// Nelder–Mead (reflection 1, expansion 2, contraction ½, shrink ½) from `start` with
// initial steps `step`; deterministic.
std::array<double, 3> NelderMead(const std::function<double(const std::array<double, 3>&)>& f,
                                 const std::array<double, 3>& start,
                                 const std::array<double, 3>& step, double* best_value) {
  constexpr int kMaxSteps = 1000;
  std::array<std::array<double, 3>, 4> x{start, start, start, start};
  for (int i = 0; i < 3; ++i)
    x[static_cast<std::size_t>(i + 1)][static_cast<std::size_t>(i)] +=
        step[static_cast<std::size_t>(i)];
  std::array<double, 4> fx{};
  for (std::size_t i = 0; i < 4; ++i) fx[i] = f(x[i]);
  for (int it = 0; it < kMaxSteps; ++it) {
    std::array<std::size_t, 4> order{0, 1, 2, 3};
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return fx[a] < fx[b] || (fx[a] == fx[b] && a < b);
    });
    const std::size_t lo = order[0], hi = order[3], second = order[2];
    // 1e-6 nats decide no BIC comparison (its terms are several nats).
    if (std::abs(fx[hi] - fx[lo]) <= 1e-6) break;
    std::array<double, 3> centroid{};
    for (std::size_t i : {order[0], order[1], order[2]}) {
      for (std::size_t k = 0; k < 3; ++k) centroid[k] += x[i][k] / 3.0;
    }
    const auto along = [&](double t) {
      std::array<double, 3> y{};
      for (std::size_t k = 0; k < 3; ++k) y[k] = centroid[k] + t * (x[hi][k] - centroid[k]);
      return y;
    };
    const std::array<double, 3> r = along(-1.0);
    const double fr = f(r);
    if (fr < fx[lo]) {
      const std::array<double, 3> e = along(-2.0);
      const double fe = f(e);
      x[hi] = fe < fr ? e : r;
      fx[hi] = std::min(fe, fr);
    } else if (fr < fx[second]) {
      x[hi] = r;
      fx[hi] = fr;
    } else {
      const std::array<double, 3> c = fr < fx[hi] ? along(-0.5) : along(0.5);
      const double fc = f(c);
      if (fc < std::min(fr, fx[hi])) {
        x[hi] = c;
        fx[hi] = fc;
      } else {
        for (std::size_t i = 0; i < 4; ++i) {
          if (i == lo) continue;
          for (std::size_t k = 0; k < 3; ++k) x[i][k] = x[lo][k] + 0.5 * (x[i][k] - x[lo][k]);
          fx[i] = f(x[i]);
        }
      }
    }
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < 4; ++i) {
    if (fx[i] < fx[best]) best = i;
  }
  *best_value = fx[best];
  return x[best];
}

// Gaussian kernel density of x (Silverman's bandwidth) at `points`.
std::vector<double> KernelDensity(const std::vector<double>& sorted,
                                  const std::vector<double>& points) {
  const auto n = static_cast<double>(sorted.size());
  double mean = 0.0, var = 0.0;
  for (double v : sorted) mean += v;
  mean /= n;
  for (double v : sorted) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / n);
  const double iqr = sorted[static_cast<std::size_t>(0.75 * (n - 1))] -
                     sorted[static_cast<std::size_t>(0.25 * (n - 1))];
  const double spread = iqr > 0.0 ? std::min(sd, iqr / 1.34) : sd;
  const double h = 0.9 * spread * std::pow(n, -0.2);
  std::vector<double> out;
  for (double p : points) {
    // Only the draws within 8 bandwidths contribute more than e^−32.
    const auto b = std::lower_bound(sorted.begin(), sorted.end(), p - 8.0 * h);
    const auto e = std::upper_bound(b, sorted.end(), p + 8.0 * h);
    double f = 0.0;
    for (auto it = b; it != e; ++it) {
      const double u = (*it - p) / h;
      f += std::exp(-0.5 * u * u);
    }
    out.push_back(f / (n * h));
  }
  return out;
}

std::vector<double> Finite(std::span<const double> x) {
  std::vector<double> v;
  for (double value : x) {
    if (std::isfinite(value)) v.push_back(value);
  }
  return v;
}

}  // namespace

SkewNormal FitSkewNormal(std::span<const double> x) {
  const std::vector<double> v = Finite(x);
  SkewNormal out;
  if (v.size() < 4) return out;
  const auto n = static_cast<double>(v.size());
  double mean = 0.0, m2 = 0.0, m3 = 0.0;
  for (double value : v) mean += value;
  mean /= n;
  for (double value : v) {
    const double d = value - mean;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= n;
  m3 /= n;
  out.location = mean;
  if (!(m2 > 0.0)) return out;
  const double sd = std::sqrt(m2);
  std::vector<double> z;
  for (double value : v) z.push_back((value - mean) / sd);
  // Method of moments: skewness γ (|γ| < 0.995 for a skew-normal) → δ → (ξ, ω, α).
  const double gamma = std::clamp(m3 / (m2 * sd), -0.99, 0.99);
  const double g23 = std::pow(std::abs(gamma), 2.0 / 3.0);
  const double delta =
      std::copysign(std::sqrt(0.5 * std::numbers::pi * g23 /
                              (g23 + std::pow(0.5 * (4.0 - std::numbers::pi), 2.0 / 3.0))),
                    gamma);
  const double omega = 1.0 / std::sqrt(1.0 - 2.0 * delta * delta / std::numbers::pi);
  const std::array<double, 3> moments{-omega * delta * std::sqrt(2.0 / std::numbers::pi),
                                      std::log(omega), delta / std::sqrt(1.0 - delta * delta)};
  const auto cost = [&](const std::array<double, 3>& p) { return SkewNormalCost(z, p); };
  double best = HUGE_VAL;
  std::array<double, 3> p{};
  for (const std::array<double, 3>& start : {moments, std::array<double, 3>{0.0, 0.0, 0.0}}) {
    double value = HUGE_VAL;
    std::array<double, 3> q = NelderMead(cost, start, {0.3, 0.2, 1.0}, &value);
    // A restart from the answer: Nelder–Mead can stall on a collapsed simplex.
    q = NelderMead(cost, q, {0.1, 0.05, 0.5}, &value);
    if (value < best) {
      best = value;
      p = q;
    }
  }
  out.location = mean + sd * p[0];
  out.scale = sd * std::exp(p[1]);
  out.shape = p[2];
  out.log_likelihood = -best - n * std::log(sd);
  return out;
}

ModeTest TestTwoModes(std::span<const double> x, int chains, double min_weight,
                      double min_separation) {
  ModeTest t;
  t.mixture = FitTwoGaussians(x);
  t.screen = IsBimodal(t.mixture, min_weight, min_separation);
  if (!t.screen) return t;
  std::vector<double> sorted = Finite(x);
  std::sort(sorted.begin(), sorted.end());
  const TwoGaussians& m = t.mixture;
  // Step 2: the density on 128 points from a component sd below the lower mean to one
  // above the upper one (within the draws' range).
  constexpr int kGrid = 128;
  const double a = std::max(sorted.front(), m.mean[0] - std::sqrt(m.variance[0]));
  const double b = std::min(sorted.back(), m.mean[1] + std::sqrt(m.variance[1]));
  std::vector<double> grid;
  for (int i = 0; i < kGrid; ++i) grid.push_back(a + (b - a) * i / (kGrid - 1));
  const std::vector<double> f = KernelDensity(sorted, grid);
  std::size_t trough = kGrid;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    if (grid[i] <= m.mean[0] || grid[i] >= m.mean[1]) continue;
    if (trough == kGrid || f[i] < f[trough]) trough = i;
  }
  if (trough == kGrid) return t;
  const double peak_lo = *std::max_element(f.begin(), f.begin() + static_cast<long>(trough) + 1);
  const double peak_hi = *std::max_element(f.begin() + static_cast<long>(trough), f.end());
  t.trough = grid[trough];
  t.dip_ratio = f[trough] / std::max(std::min(peak_lo, peak_hi), 1e-300);
  // Chains holding each side.
  chains = std::max(chains, 1);
  const std::size_t per_chain = x.size() / static_cast<std::size_t>(chains);
  double n_eff = 0.0;
  for (int c = 0; c < chains && per_chain > 0; ++c) {
    const auto chain = x.subspan(static_cast<std::size_t>(c) * per_chain, per_chain);
    std::size_t below = 0, finite = 0;
    for (double v : chain) {
      if (!std::isfinite(v)) continue;
      ++finite;
      below += v < t.trough ? 1 : 0;
    }
    if (finite == 0) continue;
    const double share = static_cast<double>(below) / static_cast<double>(finite);
    t.chains_lower += share >= kChainModeShare ? 1 : 0;
    t.chains_upper += 1.0 - share >= kChainModeShare ? 1 : 0;
    // Each chain's own ESS: chains sitting in different modes are not penalised for
    // disagreeing, only for their autocorrelation.
    const double ess = nuts::Ess({std::vector<double>(chain.begin(), chain.end())});
    n_eff += std::isfinite(ess) ? std::clamp(ess, 1.0, static_cast<double>(finite)) : 1.0;
  }
  if (t.dip_ratio > kMaxDipRatio) return t;
  // Step 3, on at most kMaxFitDraws evenly spaced order statistics (the likelihoods are
  // scaled to n_eff anyway; this bounds rank 0's work on runs with many long shards).
  constexpr std::size_t kMaxFitDraws = 2000;
  const std::size_t stride = (sorted.size() + kMaxFitDraws - 1) / kMaxFitDraws;
  std::vector<double> fit;
  for (std::size_t i = stride / 2; i < sorted.size(); i += stride) fit.push_back(sorted[i]);
  t.skew = FitSkewNormal(fit);
  double mixture_ll = 0.0;
  for (double v : fit) {
    mixture_ll += std::log(m.weight[0] * std::exp(NormalLogPdf(v, m.mean[0], m.variance[0])) +
                           m.weight[1] * std::exp(NormalLogPdf(v, m.mean[1], m.variance[1])));
  }
  const auto n = static_cast<double>(fit.size());
  t.effective_draws = std::max(n_eff, 1.0);
  t.delta_bic = 2.0 * (mixture_ll - t.skew.log_likelihood) * (t.effective_draws / n) -
                2.0 * std::log(t.effective_draws);
  t.two_modes = t.delta_bic > 0.0;
  return t;
}

std::vector<BimodalParameter> DetectBimodality(const std::vector<ShardDraws>& draws,
                                               const std::vector<std::string>& names,
                                               const std::vector<std::string>& tested,
                                               double min_weight, double min_separation, int chains,
                                               const std::vector<int>& shard_ids) {
  std::vector<BimodalParameter> out;
  for (const std::string& name : tested) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) continue;
    const auto p = static_cast<std::size_t>(it - names.begin());
    BimodalParameter b;
    b.name = name;
    std::vector<ModeTest> tests;
    std::vector<int> ids;
    for (std::size_t s = 0; s < draws.size(); ++s) {
      const ShardDraws& d = draws[s];
      if (d.count() == 0) continue;
      std::vector<double> x;
      for (int j = 0; j < d.count(); ++j) {
        x.push_back(d.draws[static_cast<std::size_t>(j * d.dims) + p]);
      }
      ++b.shards_tested;
      tests.push_back(TestTwoModes(x, chains, min_weight, min_separation));
      ids.push_back(shard_ids.empty() ? static_cast<int>(s) : shard_ids[s]);
    }
    double lower = 0.0, upper = 0.0;
    for (std::size_t s = 0; s < tests.size(); ++s) {
      const ModeTest& t = tests[s];
      if (t.screen) b.screened_shards.push_back(ids[s]);
      if (!t.two_modes) continue;
      // Another shard with two modes on the same sides of both troughs.
      bool elsewhere = false;
      for (std::size_t o = 0; o < tests.size() && !elsewhere; ++o) {
        const ModeTest& u = tests[o];
        elsewhere = o != s && u.two_modes && u.mixture.mean[0] < t.trough &&
                    t.trough < u.mixture.mean[1] && t.mixture.mean[0] < u.trough &&
                    u.trough < t.mixture.mean[1];
      }
      if (!elsewhere && !t.confirmed_by_chains()) {
        b.unconfirmed_shards.push_back(ids[s]);
        continue;
      }
      b.bimodal_shards.push_back(ids[s]);
      lower += t.mixture.mean[0];
      upper += t.mixture.mean[1];
    }
    if (!b.bimodal_shards.empty()) {
      b.lower_mode = lower / static_cast<double>(b.bimodal_shards.size());
      b.upper_mode = upper / static_cast<double>(b.bimodal_shards.size());
    }
    b.flagged =
        b.shards_tested > 0 && static_cast<double>(b.bimodal_shards.size()) >=
                                   kBimodalShardFraction * static_cast<double>(b.shards_tested);
    out.push_back(b);
  }
  return out;
}

std::vector<ShardDraws> DrawsOfSampledShards(const std::vector<ShardDraws>& draws,
                                             const std::vector<double>& divergence_rates,
                                             double max_divergence_rate) {
  std::vector<ShardDraws> out = draws;
  for (std::size_t s = 0; s < out.size() && s < divergence_rates.size(); ++s) {
    if (divergence_rates[s] > max_divergence_rate) out[s].draws.clear();
  }
  return out;
}

}  // namespace homodyne::cmc
