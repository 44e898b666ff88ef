#include "model/heterodyne_reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::model::heterodyne {
namespace {

constexpr double kSharpness = 50.0;
constexpr double kDegToRad = std::numbers::pi / 180.0;

double Logistic(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

// The half decay exp(clip(−½q²I, −700, 0)) and its derivative with respect to I.
void HalfDecay(double q, double integral, double& h, double& dh_dintegral) {
  const double a = -0.5 * q * q * integral;
  const double clipped = std::clamp(a, -kExpClip, 0.0);
  h = std::exp(clipped);
  dh_dintegral = (a > -kExpClip && a < 0.0) ? h * (-0.5 * q * q) : 0.0;
}

void CheckInput(const HeterodyneInput& in) {
  if (in.t.empty()) ThrowBadInput("the two-component model needs a non-empty time grid");
  if (in.phi_deg.empty()) ThrowBadInput("the two-component model needs at least one angle");
  if (in.physical.size() != static_cast<std::size_t>(kNumPhysical)) {
    ThrowBadInput(fmt::format("the two-component model has {} physical parameters, found {}",
                              kNumPhysical, in.physical.size()));
  }
  if (in.contrast.size() != in.phi_deg.size() || in.offset.size() != in.phi_deg.size()) {
    ThrowBadInput(
        fmt::format("one contrast and one offset per angle: {} angle(s), {} contrast(s), "
                    "{} offset(s)",
                    in.phi_deg.size(), in.contrast.size(), in.offset.size()));
  }
  if (!(in.dt > 0.0) || !std::isfinite(in.dt)) {
    ThrowBadInput(fmt::format("dt must be a finite number > 0, found {}", in.dt));
  }
  if (!std::isfinite(in.q)) ThrowBadInput(fmt::format("q must be finite, found {}", in.q));
}

}  // namespace

const std::array<std::string, kNumPhysical>& ParameterNames() {
  static const std::array<std::string, kNumPhysical> names = {
      "D0_ref", "alpha_ref", "D_offset_ref", "D0_sample", "alpha_sample", "D_offset_sample",
      "v0",     "v_beta",    "v_offset",     "f0",        "f1",           "f2",
      "f3",     "phi0_het"};
  return names;
}

int ParameterIndex(std::string_view name) {
  if (name == "beta") return het::kVBeta;
  if (name == "phi0") return het::kPhi0Het;
  const auto& names = ParameterNames();
  for (int i = 0; i < kNumPhysical; ++i) {
    if (names[static_cast<std::size_t>(i)] == name) return i;
  }
  return -1;
}

double PowerTerm(double t, double exponent) {
  if (!(t > 0.0)) return 0.0;
  const double base = t > kPowerFloor ? t : kPowerFloor;
  return std::pow(base, exponent);
}

double Softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

double SoftClip(double x) {
  const double y = Softplus(kSharpness * x) / kSharpness;
  return 1.0 - Softplus(kSharpness * (1.0 - y)) / kSharpness;
}

double SoftClipDerivative(double x) {
  const double y = Softplus(kSharpness * x) / kSharpness;
  return Logistic(kSharpness * x) * Logistic(kSharpness * (1.0 - y));
}

double SampleFraction(double t, std::span<const double> p) {
  const double z = std::clamp(p[het::kF1] * (t - p[het::kF2]), -kExpClip, kExpClip);
  const double x = p[het::kF0] * std::exp(z) + p[het::kF3];
  return SoftClip(x);
}

std::vector<double> TrapezoidPrefix(std::span<const double> f, double dt) {
  std::vector<double> out(f.size(), 0.0);
  double running = 0.0;
  for (std::size_t m = 1; m < f.size(); ++m) {
    running += (f[m - 1] + f[m]) / 2.0;
    out[m] = dt * running;
  }
  return out;
}

TimeTables BuildTimeTables(std::span<const double> t, double dt, std::span<const double> p,
                           bool derivatives) {
  TimeTables tab;
  // Rates (and their derivatives) on the grid, then their prefixes (the prefix is linear).
  const int first[3] = {het::kD0Ref, het::kD0Sample, het::kV0};
  for (int r = 0; r < 3; ++r) {
    const double amp = p[static_cast<std::size_t>(first[r])];
    const double ex = p[static_cast<std::size_t>(first[r] + 1)];
    const double off = p[static_cast<std::size_t>(first[r] + 2)];
    std::vector<double> f, df[3];
    for (double tm : t) {
      const double pw = PowerTerm(tm, ex);
      const double raw = amp * pw + off;
      // Transport rates are floored at 0; the velocity is not.
      f.push_back(r < 2 ? std::max(raw, 0.0) : raw);
      if (!derivatives) continue;
      const double dpw = tm > 0.0 ? pw * std::log(tm > kPowerFloor ? tm : kPowerFloor) : 0.0;
      const double slope = r < 2 ? MaxZeroSlope(raw) : 1.0;
      df[0].push_back(slope * pw);
      df[1].push_back(slope * amp * dpw);
      df[2].push_back(slope);
    }
    tab.p[r] = TrapezoidPrefix(f, dt);
    for (int d = 0; derivatives && d < 3; ++d) tab.dp[r][d] = TrapezoidPrefix(df[d], dt);
  }
  // The fraction (and its derivatives).
  for (double tm : t) {
    const double z = p[het::kF1] * (tm - p[het::kF2]);
    const double ez = std::exp(std::clamp(z, -kExpClip, kExpClip));
    const double x = p[het::kF0] * ez + p[het::kF3];
    tab.fs.push_back(SoftClip(x));
    if (!derivatives) continue;
    const bool clipped = z < -kExpClip || z > kExpClip;
    const double ds = SoftClipDerivative(x);
    tab.dfs[0].push_back(ds * ez);
    tab.dfs[1].push_back(clipped ? 0.0 : ds * p[het::kF0] * ez * (tm - p[het::kF2]));
    tab.dfs[2].push_back(clipped ? 0.0 : ds * -p[het::kF0] * ez * p[het::kF1]);
    tab.dfs[3].push_back(ds);
  }
  return tab;
}

HeterodyneEvaluation Evaluate(const HeterodyneInput& in) {
  CheckInput(in);
  const std::vector<double>& p = in.physical;
  HeterodyneEvaluation ev;
  const int n = static_cast<int>(in.t.size());
  ev.n = n;
  for (double tm : in.t) {
    ev.rate_ref.push_back(
        std::max(p[het::kD0Ref] * PowerTerm(tm, p[het::kAlphaRef]) + p[het::kDOffsetRef], 0.0));
    ev.rate_sample.push_back(std::max(
        p[het::kD0Sample] * PowerTerm(tm, p[het::kAlphaSample]) + p[het::kDOffsetSample], 0.0));
    ev.velocity.push_back(p[het::kV0] * PowerTerm(tm, p[het::kVBeta]) + p[het::kVOffset]);
    ev.fraction_sample.push_back(SampleFraction(tm, p));
  }
  ev.p_ref = TrapezoidPrefix(ev.rate_ref, in.dt);
  ev.p_sample = TrapezoidPrefix(ev.rate_sample, in.dt);
  ev.p_velocity = TrapezoidPrefix(ev.velocity, in.dt);
  const auto nn = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  ev.half_ref.resize(nn);
  ev.half_sample.resize(nn);
  const double q2 = in.q * in.q;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const auto e = static_cast<std::size_t>(i * n + j);
      const double dr =
          ev.p_ref[static_cast<std::size_t>(j)] - ev.p_ref[static_cast<std::size_t>(i)];
      const double ds =
          ev.p_sample[static_cast<std::size_t>(j)] - ev.p_sample[static_cast<std::size_t>(i)];
      const double ir = std::sqrt(dr * dr + kSmoothAbs);
      const double is = std::sqrt(ds * ds + kSmoothAbs);
      ev.half_ref[e] = std::exp(std::clamp(-0.5 * q2 * ir, -kExpClip, 0.0));
      ev.half_sample[e] = std::exp(std::clamp(-0.5 * q2 * is, -kExpClip, 0.0));
    }
  }
  for (std::size_t k = 0; k < in.phi_deg.size(); ++k) {
    const double a = in.q * std::cos((in.phi_deg[k] + p[het::kPhi0Het]) * kDegToRad);
    std::vector<double>& c2 = ev.c2.emplace_back(nn);
    for (int i = 0; i < n; ++i) {
      const double fsi = ev.fraction_sample[static_cast<std::size_t>(i)];
      const double fri = 1.0 - fsi;
      for (int j = 0; j < n; ++j) {
        const auto e = static_cast<std::size_t>(i * n + j);
        const double fsj = ev.fraction_sample[static_cast<std::size_t>(j)];
        const double frj = 1.0 - fsj;
        const double hr = ev.half_ref[e], hs = ev.half_sample[e];
        const double v =
            ev.p_velocity[static_cast<std::size_t>(j)] - ev.p_velocity[static_cast<std::size_t>(i)];
        const double theta = a * v;
        const double rr = (fri * frj) * (fri * frj) * (hr * hr);
        const double ss = (fsi * fsj) * (fsi * fsj) * (hs * hs);
        const double x = 2.0 * ((fri * fsi) * (frj * fsj)) * hr * hs * std::cos(theta);
        double norm = (fsi * fsi + fri * fri) * (fsj * fsj + frj * frj);
        norm = norm > kNormFloor ? norm : kNormFloor;
        c2[e] = in.offset[k] + (in.contrast[k] * (rr + ss + x)) / norm;
      }
    }
  }
  return ev;
}

HeterodyneGradient::HeterodyneGradient(const HeterodyneInput& in,
                                       std::span<const double> expanded) {
  if (in.t.empty() || in.phi_deg.empty()) {
    ThrowBadInput("the two-component gradient needs a time grid and at least one angle");
  }
  n_ = static_cast<int>(in.t.size());
  n_angles_ = static_cast<int>(in.phi_deg.size());
  if (expanded.size() != static_cast<std::size_t>(num_parameters())) {
    ThrowBadInput(fmt::format("expanded two-component parameters: expected {}, found {}",
                              num_parameters(), expanded.size()));
  }
  q_ = in.q;
  phi_deg_ = in.phi_deg;
  contrast_.assign(expanded.begin(), expanded.begin() + n_angles_);
  offset_.assign(expanded.begin() + n_angles_, expanded.begin() + 2 * n_angles_);
  const std::span<const double> p = expanded.subspan(static_cast<std::size_t>(2 * n_angles_));
  phi0_ = p[het::kPhi0Het];

  tab_ = BuildTimeTables(in.t, in.dt, p, true);
}

double HeterodyneGradient::C2(int k, int i, int j, std::span<double> grad) const {
  std::fill(grad.begin(), grad.end(), 0.0);
  const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
  const std::size_t phys = static_cast<std::size_t>(2 * n_angles_);
  // Transport: h and dh/dP-difference for the reference and the sample.
  double h[2], dh_ddelta[2];
  for (int r = 0; r < 2; ++r) {
    const double delta = tab_.p[r][uj] - tab_.p[r][ui];
    const double integral = std::sqrt(delta * delta + kSmoothAbs);
    double dh_di = 0.0;
    HalfDecay(q_, integral, h[r], dh_di);
    dh_ddelta[r] = dh_di * delta / integral;
  }
  // Phase.
  const double angle = (phi_deg_[static_cast<std::size_t>(k)] + phi0_) * kDegToRad;
  const double a = q_ * std::cos(angle);
  const double v = tab_.p[2][uj] - tab_.p[2][ui];
  const double theta = a * v;
  const double c = std::cos(theta);
  const double dc_dtheta = -std::sin(theta);
  // Fractions.
  const double bi = tab_.fs[ui], bj = tab_.fs[uj];
  const double ai = 1.0 - bi, aj = 1.0 - bj;
  const double hr = h[0], hs = h[1];
  const double rr = (ai * aj) * (ai * aj) * (hr * hr);
  const double ss = (bi * bj) * (bi * bj) * (hs * hs);
  const double cross = 2.0 * ((ai * bi) * (aj * bj)) * hr * hs * c;
  const double sum = rr + ss + cross;
  const double norm_raw = (bi * bi + ai * ai) * (bj * bj + aj * aj);
  const bool norm_floored = !(norm_raw > kNormFloor);
  const double norm = norm_floored ? kNormFloor : norm_raw;
  const double g = sum / norm;
  const double contrast = contrast_[static_cast<std::size_t>(k)];
  const double c2 = offset_[static_cast<std::size_t>(k)] + (contrast * sum) / norm;

  grad[static_cast<std::size_t>(k)] = g;
  grad[static_cast<std::size_t>(n_angles_ + k)] = 1.0;

  // d(sum)/dh_r, dh_s, dc.
  const double dsum_dhr = 2.0 * (ai * aj) * (ai * aj) * hr + 2.0 * (ai * bi) * (aj * bj) * hs * c;
  const double dsum_dhs = 2.0 * (bi * bj) * (bi * bj) * hs + 2.0 * (ai * bi) * (aj * bj) * hr * c;
  const double dsum_dc = 2.0 * (ai * bi) * (aj * bj) * hr * hs;
  const double dg_dhr = dsum_dhr / norm, dg_dhs = dsum_dhs / norm;
  const double dg_dtheta = dsum_dc * dc_dtheta / norm;
  // d g / d f_s at i and at j (f_r = 1 − f_s), the norm's derivative included.
  auto dg_dfs = [&](double b_self, double a_self, double b_other, double a_other) {
    const double dsum = -2.0 * a_self * (a_other * a_other) * (hr * hr) +
                        2.0 * b_self * (b_other * b_other) * (hs * hs) +
                        2.0 * (a_other * b_other) * hr * hs * c * (a_self - b_self);
    const double dnorm =
        norm_floored ? 0.0 : 2.0 * (b_self - a_self) * (b_other * b_other + a_other * a_other);
    return (dsum - g * dnorm) / norm;
  };
  const double dg_dfsi = dg_dfs(bi, ai, bj, aj);
  const double dg_dfsj = dg_dfs(bj, aj, bi, ai);

  // Transport parameters.
  for (int r = 0; r < 2; ++r) {
    const double dg_dh = r == 0 ? dg_dhr : dg_dhs;
    const int base = r == 0 ? het::kD0Ref : het::kD0Sample;
    for (int d = 0; d < 3; ++d) {
      const double ddelta = tab_.dp[r][d][uj] - tab_.dp[r][d][ui];
      grad[phys + static_cast<std::size_t>(base + d)] = contrast * dg_dh * dh_ddelta[r] * ddelta;
    }
  }
  // Velocity parameters and the angle offset.
  for (int d = 0; d < 3; ++d) {
    const double dv = tab_.dp[2][d][uj] - tab_.dp[2][d][ui];
    grad[phys + static_cast<std::size_t>(het::kV0 + d)] = contrast * dg_dtheta * a * dv;
  }
  grad[phys + het::kPhi0Het] = contrast * dg_dtheta * (-q_ * std::sin(angle) * kDegToRad * v);
  // Fraction parameters.
  for (int d = 0; d < 4; ++d) {
    grad[phys + static_cast<std::size_t>(het::kF0 + d)] =
        contrast * (dg_dfsi * tab_.dfs[d][ui] + dg_dfsj * tab_.dfs[d][uj]);
  }
  return c2;
}

}  // namespace homodyne::model::heterodyne
