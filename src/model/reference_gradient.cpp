#include "model/reference_gradient.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"
#include "model/constants.h"
#include "model/reference_model.h"
#include "model/sinc_derivative.h"

namespace homodyne::model::reference {

ReferenceGradient::Rate ReferenceGradient::BuildRate(const std::vector<double>& ts, double a,
                                                     double e, double o) {
  const size_t n = ts.size();
  std::vector<double> f(n), df[3];
  for (auto& d : df) d.assign(n, 0.0);
  for (size_t m = 0; m < n; ++m) {
    const double power = std::pow(ts[m], e);
    const double raw = a * power + o;
    f[m] = FloorAt(raw, kRateFloor);
    if (raw > kRateFloor) {  // the floor passes no gradient when it is selected
      df[0][m] = power;
      df[1][m] = a * power * std::log(ts[m]);
      df[2][m] = 1.0;
    }
  }
  Rate rate;
  rate.cum = CumulativeTrapezoid(f);
  for (int p = 0; p < 3; ++p) rate.dcum[p] = CumulativeTrapezoid(df[p]);
  return rate;
}

ReferenceGradient::ReferenceGradient(AnalysisMode mode, const Geometry& geometry,
                                     std::vector<double> t, std::vector<double> phi_deg,
                                     std::span<const double> params)
    : mode_(mode),
      geometry_(geometry),
      t_(std::move(t)),
      phi_deg_(std::move(phi_deg)),
      params_(params.begin(), params.end()),
      index_(mode, static_cast<int>(phi_deg_.size())) {
  if (mode == AnalysisMode::kTwoComponent) {
    ThrowBadInput("the homodyne reference gradient has no two_component mode (HeterodyneGradient)");
  }
  if (static_cast<int>(params_.size()) != index_.size()) {
    ThrowBadInput(
        fmt::format("expected {} expanded parameters, found {}", index_.size(), params_.size()));
  }
  geometry_.Validate();
  const auto ts = FlooredTimes(t_);
  const double* p = params_.data() + index_.phys(0);
  diffusion_ = BuildRate(ts, p[0], p[1], p[2]);
  if (mode_ == AnalysisMode::kLaminarFlow) shear_ = BuildRate(ts, p[3], p[4], p[5]);
}

double ReferenceGradient::C2(int k, int i, int j, std::span<double> grad) const {
  std::fill(grad.begin(), grad.end(), 0.0);
  const double* p = params_.data() + index_.phys(0);
  const auto ui = static_cast<size_t>(i);
  const auto uj = static_cast<size_t>(j);

  // Diffusion: I_D = sqrt(Δ² + 1e-12), dI = Δ/I · dΔ.
  double d_id[3];
  const double delta_d = diffusion_.cum[ui] - diffusion_.cum[uj];
  const double id = std::sqrt(delta_d * delta_d + kSmoothAbsEps2);
  for (int q = 0; q < 3; ++q) {
    d_id[q] = delta_d / id * (diffusion_.dcum[q][ui] - diffusion_.dcum[q][uj]);
  }
  const double wq = geometry_.DiffusionPrefactor();
  const double log_g1 = -wq * id;
  const bool clipped = log_g1 < kLogG1Min;
  const double g1d = std::exp(std::clamp(log_g1, kLogG1Min, 0.0));
  double d_g1d[7] = {0, 0, 0, 0, 0, 0, 0};
  if (!clipped) {
    for (int q = 0; q < 3; ++q) d_g1d[q] = g1d * (-wq) * d_id[q];
  }

  // Shear: S = sinc(Φ)², Φ = sp·cos(π/180(φ0 − φ))·I_G.
  double s = 1.0;
  double d_s[7] = {0, 0, 0, 0, 0, 0, 0};
  if (mode_ == AnalysisMode::kLaminarFlow) {
    const double delta_g = shear_.cum[ui] - shear_.cum[uj];
    const double ig = std::sqrt(delta_g * delta_g + kSmoothAbsEps2);
    const double sp = geometry_.SincPrefactor();
    const double angle = std::numbers::pi / 180.0 * (p[6] - phi_deg_[static_cast<size_t>(k)]);
    const double cos_term = std::cos(angle);
    const double x = sp * cos_term * ig;
    const double sinc = SincU(x);
    const double dsinc = SincDerivative(x, sinc, std::cos(x));
    s = sinc * sinc;
    const double ds_dx = 2.0 * sinc * dsinc;
    for (int q = 0; q < 3; ++q) {
      const double d_ig = delta_g / ig * (shear_.dcum[q][ui] - shear_.dcum[q][uj]);
      d_s[3 + q] = ds_dx * sp * cos_term * d_ig;
    }
    d_s[6] = ds_dx * sp * (-std::sin(angle) * std::numbers::pi / 180.0) * ig;
  }

  const double g1_raw = g1d * s;
  const double g1 = FloorAt(g1_raw, kG1Floor);
  const double contrast = params_[static_cast<size_t>(index_.contrast(k))];
  const double offset = params_[static_cast<size_t>(index_.offset(k))];
  grad[static_cast<size_t>(index_.contrast(k))] = g1 * g1;
  grad[static_cast<size_t>(index_.offset(k))] = 1.0;
  if (g1_raw > kG1Floor) {
    for (int q = 0; q < index_.n_phys; ++q) {
      const double dg1 = d_g1d[q] * s + g1d * d_s[q];
      grad[static_cast<size_t>(index_.phys(q))] = contrast * 2.0 * g1 * dg1;
    }
  }
  return offset + contrast * (g1 * g1);
}

}  // namespace homodyne::model::reference
