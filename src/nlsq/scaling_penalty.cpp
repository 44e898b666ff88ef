#include "nlsq/scaling_penalty.h"

#include <cmath>

#include "core/errors.h"

namespace homodyne::nlsq {
namespace {

// xpcsjax's guard of the division by |mean|.
constexpr double kMeanFloor = 1e-10;

}  // namespace

CoefficientOfVariation ComputeCoefficientOfVariation(std::span<const double> values) {
  CoefficientOfVariation out;
  const std::size_t n = values.size();
  out.gradient.assign(n, 0.0);
  if (n == 0) return out;
  const double nd = static_cast<double>(n);
  double sum = 0.0;
  for (double v : values) sum += v;
  const double mean = sum / nd;
  double ss = 0.0;
  for (double v : values) ss += (v - mean) * (v - mean);
  const double std = std::sqrt(ss / nd);
  // ∂std/∂v_k = (v_k − mean)/(n·std); the mean's own derivative drops out (Σ(v − mean) = 0).
  const bool relative = std::abs(mean) > kMeanFloor;
  const double abs_mean = std::abs(mean);
  out.value = relative ? std / abs_mean : std;
  if (!(std > 0.0)) return out;
  for (std::size_t k = 0; k < n; ++k) {
    const double dstd = (values[k] - mean) / (nd * std);
    out.gradient[k] =
        relative ? dstd / abs_mean - std * (mean > 0.0 ? 1.0 : -1.0) / (nd * mean * mean) : dstd;
  }
  return out;
}

ScalingSpreadPenalty::ScalingSpreadPenalty(const model::ExpandedIndex& index, double lambda,
                                           double sigma)
    : active_(true), index_(index), lambda_(lambda), weight_(std::sqrt(lambda) / sigma) {
  HOMODYNE_CHECK(lambda >= 0.0 && std::isfinite(lambda), "penalty lambda must be finite and >= 0");
  HOMODYNE_CHECK(sigma > 0.0, "residual scale must be > 0");
}

double ScalingSpreadPenalty::Chi2(std::span<const double> expanded) const {
  double chi2 = 0.0;
  AddChi2(expanded, chi2);
  return chi2;
}

void ScalingSpreadPenalty::AddChi2(std::span<const double> expanded, double& chi2) const {
  if (!active_) return;
  const auto n = static_cast<std::size_t>(index_.n_angles);
  for (const int first : {index_.contrast(0), index_.offset(0)}) {
    const double p =
        weight_ *
        ComputeCoefficientOfVariation(expanded.subspan(static_cast<std::size_t>(first), n)).value;
    chi2 += p * p;
  }
}

void ScalingSpreadPenalty::AddTo(std::span<const double> expanded,
                                 model::NormalEquations& eq) const {
  if (!active_) return;
  const auto n = static_cast<std::size_t>(index_.n_angles);
  HOMODYNE_CHECK(eq.size == index_.size(), "normal equations are not in the expanded space");
  for (const int first : {index_.contrast(0), index_.offset(0)}) {
    const CoefficientOfVariation cv =
        ComputeCoefficientOfVariation(expanded.subspan(static_cast<std::size_t>(first), n));
    const double p = weight_ * cv.value;
    eq.chi2 += p * p;
    for (std::size_t a = 0; a < n; ++a) {
      const double ga = weight_ * cv.gradient[a];
      const int ia = first + static_cast<int>(a);
      eq.jtr[static_cast<std::size_t>(ia)] += p * ga;
      for (std::size_t b = 0; b < n; ++b) {
        eq.JtJ(ia, first + static_cast<int>(b)) += ga * weight_ * cv.gradient[b];
      }
    }
  }
}

}  // namespace homodyne::nlsq
