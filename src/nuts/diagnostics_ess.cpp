// Effective sample size: Geyer's initial monotone sequence on FFT autocovariances
// (see diagnostics.h). O(N log N) per chain.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include <unsupported/Eigen/FFT>

#include "nuts/diagnostics.h"

namespace homodyne::nuts {
namespace {

// Biased autocovariance acov_k = (1/N) Σ_i (x_i − x̄)(x_{i+k} − x̄), k = 0..N−1, via a
// zero-padded FFT (padding to ≥ 2N avoids circular wrap-around).
std::vector<double> Autocovariance(const std::vector<double>& x, std::size_t n) {
  double mean = 0.0;
  for (std::size_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  std::size_t padded = 1;
  while (padded < 2 * n) padded *= 2;
  std::vector<double> centered(padded, 0.0);
  for (std::size_t i = 0; i < n; ++i) centered[i] = x[i] - mean;
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> spectrum;
  fft.fwd(spectrum, centered);
  for (auto& c : spectrum) c = std::complex<double>(std::norm(c), 0.0);
  std::vector<double> back;
  fft.inv(back, spectrum);  // includes the 1/padded scaling
  std::vector<double> acov(n);
  for (std::size_t k = 0; k < n; ++k) acov[k] = back[k] / static_cast<double>(n);
  return acov;
}

}  // namespace

double Ess(const Chains& chains) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (chains.empty()) return nan;
  std::size_t n = chains.front().size();
  for (const auto& chain : chains) n = std::min(n, chain.size());
  if (n < 4) return nan;
  const std::size_t m = chains.size();
  bool constant = true;
  for (const auto& chain : chains) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(chain[i])) return nan;
      if (chain[i] != chains.front()[0]) constant = false;
    }
  }
  if (constant) return nan;

  std::vector<std::vector<double>> acov(m);
  std::vector<double> chain_mean(m);
  double mean_var = 0.0;
  const double nd = static_cast<double>(n);
  for (std::size_t c = 0; c < m; ++c) {
    acov[c] = Autocovariance(chains[c], n);
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += chains[c][i];
    chain_mean[c] = sum / nd;
    mean_var += acov[c][0] * nd / (nd - 1.0);
  }
  mean_var /= static_cast<double>(m);
  double var_plus = mean_var * (nd - 1.0) / nd;
  if (m > 1) {
    double grand = 0.0;
    for (double v : chain_mean) grand += v;
    grand /= static_cast<double>(m);
    double between = 0.0;
    for (double v : chain_mean) between += (v - grand) * (v - grand);
    var_plus += between / static_cast<double>(m - 1);
  }
  auto mean_acov = [&](std::size_t lag) {
    double sum = 0.0;
    for (std::size_t c = 0; c < m; ++c) sum += acov[c][lag];
    return sum / static_cast<double>(m);
  };

  // ρ̂_t = 1 − (W − mean acov_t)/var⁺, summed in pairs while the pair sum is positive,
  // stopping 4 short of the end (the last pair stays as a bias term).
  std::vector<double> rho(n, 0.0);
  double rho_even = 1.0;
  double rho_odd = 1.0 - (mean_var - mean_acov(1)) / var_plus;
  rho[0] = rho_even;
  rho[1] = rho_odd;
  std::size_t s = 1;
  while (s < n - 4 && rho_even + rho_odd > 0.0) {
    rho_even = 1.0 - (mean_var - mean_acov(s + 1)) / var_plus;
    rho_odd = 1.0 - (mean_var - mean_acov(s + 2)) / var_plus;
    if (rho_even + rho_odd >= 0.0) {
      rho[s + 1] = rho_even;
      rho[s + 2] = rho_odd;
    }
    s += 2;
  }
  const std::size_t max_s = s;
  // The last even term, when positive, reduces variance for antithetic chains.
  if (rho_even > 0.0) rho[max_s + 1] = rho_even;
  // Initial positive → initial monotone sequence.
  for (s = 1; s + 3 <= max_s; s += 2) {
    if (rho[s + 1] + rho[s + 2] > rho[s - 1] + rho[s]) {
      rho[s + 1] = 0.5 * (rho[s - 1] + rho[s]);
      rho[s + 2] = rho[s + 1];
    }
  }
  const double total = static_cast<double>(n * m);
  double tau = -1.0;
  for (std::size_t t = 0; t < max_s; ++t) tau += 2.0 * rho[t];
  tau += rho[max_s + 1];
  tau = std::max(tau, 1.0 / std::log10(total));
  return total / tau;
}

EssResult SplitRankNormalizedEss(const Chains& chains) {
  const Chains split = SplitChains(chains);
  EssResult result;
  result.bulk = Ess(RankNormalize(split));
  const double q05 = PooledQuantile(split, 0.05);
  const double q95 = PooledQuantile(split, 0.95);
  Chains low = split;
  Chains high = split;
  for (std::size_t c = 0; c < split.size(); ++c) {
    for (std::size_t i = 0; i < split[c].size(); ++i) {
      low[c][i] = split[c][i] <= q05 ? 1.0 : 0.0;
      high[c][i] = split[c][i] >= q95 ? 1.0 : 0.0;
    }
  }
  result.tail = std::min(Ess(low), Ess(high));
  return result;
}

}  // namespace homodyne::nuts
