#include "cmc/sampling_geometry.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace homodyne::cmc {
namespace {
std::size_t At(int i) { return static_cast<std::size_t>(i); }
}  // namespace

bool SamplingGeometry::Changes(int i) const {
  if (i == log_d0) return true;
  return std::any_of(scaling.begin(), scaling.end(),
                     [i](const auto& p) { return p.first == i || p.second == i; });
}

std::vector<double> SamplingGeometry::ToTheta(std::span<const double> sites) const {
  std::vector<double> theta(sites.begin(), sites.end());
  for (const auto& [c, o] : scaling) {
    const double contrast = std::exp(sites[At(c)]);
    theta[At(c)] = contrast;
    theta[At(o)] = sites[At(o)] - contrast;
  }
  if (log_d0 >= 0) theta[At(log_d0)] = std::exp(sites[At(log_d0)]);
  return theta;
}

std::vector<double> SamplingGeometry::ToSites(std::span<const double> theta) const {
  std::vector<double> s(theta.begin(), theta.end());
  for (const auto& [c, o] : scaling) {
    s[At(c)] = std::log(theta[At(c)]);
    s[At(o)] = theta[At(o)] + theta[At(c)];
  }
  if (log_d0 >= 0) s[At(log_d0)] = std::log(theta[At(log_d0)]);
  return s;
}

bool SamplingGeometry::Inside(std::span<const double> theta, std::span<const double> lower,
                              std::span<const double> upper) const {
  const auto inside = [&](int i) {
    const double x = theta[At(i)];
    return std::isfinite(x) && x > lower[At(i)] && x < upper[At(i)];
  };
  for (const auto& [c, o] : scaling) {
    if (!inside(c) || !inside(o)) return false;
  }
  return log_d0 < 0 || inside(log_d0);
}

double SamplingGeometry::LogJacobian(std::span<const double> sites) const {
  // ∂(contrast, offset)/∂(ℓ, a) = [[c, 0], [−c, 1]]: det c = exp(ℓ); D0 = exp(ℓ_D).
  double lj = 0.0;
  for (const auto& pair : scaling) lj += sites[At(pair.first)];
  if (log_d0 >= 0) lj += sites[At(log_d0)];
  return lj;
}

void SamplingGeometry::PullBack(std::span<const double> theta, std::span<double> g) const {
  for (const auto& [c, o] : scaling) {
    const double contrast = theta[At(c)];
    // contrast = e^ℓ, offset = a − e^ℓ.
    g[At(c)] = (g[At(c)] - g[At(o)]) * contrast;
  }
  if (log_d0 >= 0) g[At(log_d0)] *= theta[At(log_d0)];
}

void SamplingGeometry::AddLogJacobianGradient(std::span<double> g) const {
  for (const auto& pair : scaling) g[At(pair.first)] += 1.0;
  if (log_d0 >= 0) g[At(log_d0)] += 1.0;
}

std::vector<std::string> SamplingGeometry::SiteNames(std::vector<std::string> names) const {
  for (const auto& [c, o] : scaling) {
    const std::string suffix = names[At(c)].substr(std::string("contrast").size());
    names[At(c)] = "log_contrast" + suffix;
    names[At(o)] = "c2_zero_lag" + suffix;
  }
  if (log_d0 >= 0) names[At(log_d0)] = "log_D0";
  return names;
}

std::string SamplingGeometry::Describe() const {
  if (!active()) return "model parameters";
  std::string out;
  if (!scaling.empty()) {
    out = fmt::format("log contrast and offset + contrast for {} angle scaling pair(s)",
                      scaling.size());
  }
  if (log_d0 >= 0) out += std::string(out.empty() ? "" : ", ") + "log D0";
  return out;
}

SamplingGeometry MakeSamplingGeometry(const std::vector<std::string>& names,
                                      std::span<const double> lower, bool scaling, bool log_d0) {
  SamplingGeometry g;
  const auto index = [&](const std::string& name) {
    const auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
  };
  if (scaling) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i].rfind("contrast", 0) != 0) continue;
      const int o = index("offset" + names[i].substr(std::string("contrast").size()));
      if (o >= 0 && lower[i] >= 0.0) g.scaling.emplace_back(static_cast<int>(i), o);
    }
  }
  if (log_d0) {
    const int d = index("D0");
    if (d >= 0 && lower[At(d)] > 0.0) g.log_d0 = d;
  }
  return g;
}

}  // namespace homodyne::cmc
