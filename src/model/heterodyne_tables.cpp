// The two-component kernel's per-pass tables (heterodyne_kernel_impl.h): the per-time and
// per-angle tables, the separable phase's and the separable decays' factors.
#include <cmath>
#include <vector>

#include "model/fast_sincos.h"
#include "model/heterodyne_kernel_impl.h"

namespace homodyne::model {
namespace het_kernel {
namespace {

// F, G, T and the rows' boundaries of one prefix P (decay.on stays false where the
// factorisation does not apply).
void BuildDecayFactors(const std::vector<double>& p, double half_q2, int span, std::size_t n_spans,
                       Tables::DecayFactors& d) {
  if (!(half_q2 < 0.0) || !std::isfinite(half_q2)) return;
  for (double v : p) {
    if (!std::isfinite(v)) return;
  }
  d.on = true;
  const std::size_t n = p.size();
  const auto L = static_cast<std::size_t>(span);
  d.f.resize(n);
  d.g.resize(n);
  for (std::size_t m = 0; m < n; ++m) {
    const std::size_t a = m - m % L, b = a + L;
    d.f[m] = std::exp(half_q2 * (p[m] - p[a]));
    d.g[m] = b < n ? std::exp(half_q2 * (p[b] - p[m])) : 0.0;
  }
  d.t.assign(n_spans * n_spans, 0.0);
  for (std::size_t s1 = 0; s1 < n_spans; ++s1) {
    for (std::size_t s2 = s1; s2 < n_spans; ++s2) {
      d.t[s1 * n_spans + s2] = std::exp(half_q2 * (p[s2 * L] - p[s1 * L]));
    }
  }
  const double shift = -half_q2 * kSmoothAbs;  // c·1e-12
  d.lo.resize(n);
  d.hi.resize(n);
  d.clip.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double pi = p[i];
    // The first column j in (i, n) where `holds` fails (it holds on a prefix).
    auto first_failing = [&](auto holds) {
      std::size_t lo = i + 1, hi = n;
      while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (holds(p[mid] - pi)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return static_cast<int>(lo);
    };
    const int shift_small =
        first_failing([&](double dr) { return !(dr > 0.0 && shift <= (2.0 * kEps) * dr); });
    const int next_anchor = static_cast<int>(std::min(n, (i / L + 1) * L));
    d.lo[i] = std::max(shift_small, next_anchor);
    d.hi[i] = first_failing([&](double dr) { return half_q2 * dr >= -kDecayFactorLimit; });
    d.clip[i] = first_failing([&](double dr) { return !(half_q2 * dr <= -kDecayClipFrom); });
  }
}

}  // namespace
}  // namespace het_kernel

using namespace het_kernel;  // NOLINT(build/namespaces): the kernel's own internals

Tables HeterodyneKernel::Impl::MakeTables(std::span<const double> params, bool derivatives) const {
  CheckParams(params);
  Tables tab;
  const int na = index.n_angles;
  const std::span<const double> p = params.subspan(static_cast<std::size_t>(2 * na));
  tab.contrast.assign(params.begin(), params.begin() + na);
  tab.offset.assign(params.begin() + na, params.begin() + 2 * na);
  tab.q2 = grid.q * grid.q;
  for (int k = 0; k < na; ++k) {
    const double angle = (grid.phi_deg[static_cast<std::size_t>(k)] + p[het::kPhi0Het]) * kDegToRad;
    tab.a.push_back(grid.q * std::cos(angle));
    tab.da.push_back(-grid.q * std::sin(angle) * kDegToRad);
  }
  static_cast<heterodyne::TimeTables&>(tab) =
      heterodyne::BuildTimeTables(grid.t, grid.dt, p, derivatives);
  tab.h_clip = std::exp(-kExpClip);
  if (Separable()) {
    const std::size_t n_t = grid.t.size();
    tab.decay_span =
        std::max(kDecayMinSpan, static_cast<int>((n_t + kDecayMaxSpans - 1) / kDecayMaxSpans));
    const auto span = static_cast<std::size_t>(tab.decay_span);
    tab.n_spans = (n_t + span - 1) / span;
    const double half_q2 = -0.5 * tab.q2;
    for (int r = 0; r < 2; ++r) {
      BuildDecayFactors(tab.p[r], half_q2, tab.decay_span, tab.n_spans, tab.decay[r]);
    }
  }
  if (Separable()) {
    const std::vector<double>& v = tab.p[2];
    const std::size_t n_t = v.size();
    tab.n_t = n_t;
    tab.v_max.resize(n_t);
    double m = 0.0;
    for (std::size_t t = 0; t < n_t; ++t) {
      // NaN propagates: no column after it is separable.
      const double av = std::abs(v[t]);
      m = (av > m || std::isnan(av)) ? av : m;
      tab.v_max[t] = m;
    }
    tab.cos_x.resize(n_t * static_cast<std::size_t>(na));
    tab.sin_x.resize(tab.cos_x.size());
    std::vector<double> x(n_t);
    for (int k = 0; k < na; ++k) {
      const double a = tab.a[static_cast<std::size_t>(k)];
      for (std::size_t t = 0; t < n_t; ++t) x[t] = a * v[t];
      const std::size_t at = static_cast<std::size_t>(k) * n_t;
      FastSinCos(x.data(), tab.sin_x.data() + at, tab.cos_x.data() + at, static_cast<int>(n_t));
    }
  }
  return tab;
}

}  // namespace homodyne::model
