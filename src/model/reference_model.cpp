#include "model/reference_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"
#include "model/constants.h"

namespace homodyne::model::reference {

double TimeFloor(std::span<const double> t) {
  if (t.empty()) return kTimeFloorMin;
  const size_t second = std::min<size_t>(1, t.size() - 1);
  const double dt_inf = std::abs(t[second] - t[0]);
  return 0.5 * dt_inf > kTimeFloorMin ? 0.5 * dt_inf : kTimeFloorMin;
}

std::vector<double> FlooredTimes(std::span<const double> t) {
  const double eps = TimeFloor(t);
  std::vector<double> ts(t.size());
  for (size_t m = 0; m < t.size(); ++m) ts[m] = FloorAt(t[m], eps);
  return ts;
}

std::vector<double> RateOnGrid(std::span<const double> ts, double amplitude, double exponent,
                               double offset) {
  std::vector<double> f(ts.size());
  for (size_t m = 0; m < ts.size(); ++m) {
    f[m] = FloorAt(amplitude * std::pow(ts[m], exponent) + offset, kRateFloor);
  }
  return f;
}

std::vector<double> CumulativeTrapezoid(std::span<const double> f) {
  std::vector<double> c(f.size(), 0.0);
  for (size_t m = 1; m < f.size(); ++m) c[m] = c[m - 1] + 0.5 * (f[m - 1] + f[m]);
  return c;
}

std::vector<double> SmoothAbsDifference(std::span<const double> c) {
  const size_t n = c.size();
  std::vector<double> out(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const double d = c[i] - c[j];
      out[i * n + j] = std::sqrt(d * d + kSmoothAbsEps2);
    }
  }
  return out;
}

double SincU(double x) {
  if (std::abs(x) < kSincTaylorBound) {
    const double x2 = x * x;
    return 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
  }
  return std::sin(x) / x;
}

ModelEvaluation Evaluate(const ModelInput& input) {
  if (input.mode == AnalysisMode::kTwoComponent) {
    ThrowBadInput(
        "the homodyne reference model has no two_component mode (heterodyne_reference.h)");
  }
  const int n_phys = NumPhysicalParameters(input.mode);
  const size_t n_phi = input.phi_deg.size();
  if (static_cast<int>(input.physical.size()) != n_phys) {
    ThrowBadInput(fmt::format("expected {} physical parameters for mode {}, found {}", n_phys,
                              ToString(input.mode), input.physical.size()));
  }
  if (input.contrast.size() != n_phi || input.offset.size() != n_phi) {
    ThrowBadInput(fmt::format("expected one contrast and offset per angle ({}), found {} / {}",
                              n_phi, input.contrast.size(), input.offset.size()));
  }
  if (input.t.empty()) ThrowBadInput("the time grid is empty");
  input.geometry.Validate();

  ModelEvaluation ev;
  const int n = static_cast<int>(input.t.size());
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  ev.n = n;
  const auto& p = input.physical;
  ev.ts = FlooredTimes(input.t);
  ev.rate_d = RateOnGrid(ev.ts, p[0], p[1], p[2]);
  ev.cum_d = CumulativeTrapezoid(ev.rate_d);
  ev.integral_d = SmoothAbsDifference(ev.cum_d);

  const double wq = input.geometry.DiffusionPrefactor();
  ev.g1_diff.resize(nn);
  for (size_t e = 0; e < nn; ++e) {
    const double log_g1 = std::clamp(-wq * ev.integral_d[e], kLogG1Min, 0.0);
    ev.g1_diff[e] = std::exp(log_g1);
  }

  const bool laminar = input.mode == AnalysisMode::kLaminarFlow;
  if (laminar) {
    ev.rate_g = RateOnGrid(ev.ts, p[3], p[4], p[5]);
    ev.cum_g = CumulativeTrapezoid(ev.rate_g);
    ev.integral_g = SmoothAbsDifference(ev.cum_g);
  }
  const double sp = input.geometry.SincPrefactor();
  for (size_t k = 0; k < n_phi; ++k) {
    std::vector<double> sinc2(nn, 1.0);
    if (laminar) {
      const double cos_term = std::cos(std::numbers::pi / 180.0 * (p[6] - input.phi_deg[k]));
      std::vector<double> arg(nn);
      for (size_t e = 0; e < nn; ++e) {
        arg[e] = sp * cos_term * ev.integral_g[e];
        const double s = SincU(arg[e]);
        sinc2[e] = s * s;
      }
      ev.shear_arg.push_back(std::move(arg));
    }
    std::vector<double> g1(nn), c2(nn);
    for (size_t e = 0; e < nn; ++e) {
      g1[e] = FloorAt(ev.g1_diff[e] * sinc2[e], kG1Floor);
      c2[e] = input.offset[k] + input.contrast[k] * (g1[e] * g1[e]);
    }
    ev.sinc2.push_back(std::move(sinc2));
    ev.g1.push_back(std::move(g1));
    ev.c2.push_back(std::move(c2));
  }
  return ev;
}

}  // namespace homodyne::model::reference
