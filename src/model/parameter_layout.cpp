#include "model/parameter_layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::model {
namespace {

double NanMean(std::span<const double> values) {
  double sum = 0.0;
  int count = 0;
  for (double v : values) {
    if (std::isnan(v)) continue;
    sum += v;
    ++count;
  }
  return count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
}

// Fourier basis value of column c (0: 1, 2m−1: cos mφ, 2m: sin mφ) at φ in radians.
double FourierBasis(int c, double phi_rad) {
  if (c == 0) return 1.0;
  const int m = (c + 1) / 2;
  return (c % 2 == 1) ? std::cos(m * phi_rad) : std::sin(m * phi_rad);
}

// Least squares min‖A·x − y‖ (A rows × cols, row-major) by the normal equations with
// partial pivoting; the Fourier bases are small and well conditioned for distinct angles.
std::vector<double> LeastSquares(const std::vector<double>& a, int rows, int cols,
                                 std::span<const double> y) {
  std::vector<double> m(static_cast<size_t>(cols * (cols + 1)), 0.0);
  auto at = [&](int r, int c) -> double& { return m[static_cast<size_t>(r * (cols + 1) + c)]; };
  double scale = 0.0;
  for (int r = 0; r < cols; ++r) {
    for (int c = 0; c < cols; ++c) {
      for (int k = 0; k < rows; ++k) {
        at(r, c) += a[static_cast<size_t>(k * cols + r)] * a[static_cast<size_t>(k * cols + c)];
      }
    }
    for (int k = 0; k < rows; ++k) {
      at(r, cols) += a[static_cast<size_t>(k * cols + r)] * y[static_cast<size_t>(k)];
    }
    scale = std::max(scale, std::abs(at(r, r)));
  }
  for (int p = 0; p < cols; ++p) {
    int best = p;
    for (int r = p + 1; r < cols; ++r) {
      if (std::abs(at(r, p)) > std::abs(at(best, p))) best = r;
    }
    if (std::abs(at(best, p)) <= 1e-12 * scale) {
      ThrowBadInput("the Fourier per-angle basis is rank deficient for these angles");
    }
    for (int c = 0; c <= cols; ++c) std::swap(at(p, c), at(best, c));
    for (int r = 0; r < cols; ++r) {
      if (r == p) continue;
      const double f = at(r, p) / at(p, p);
      for (int c = p; c <= cols; ++c) at(r, c) -= f * at(p, c);
    }
  }
  std::vector<double> x(static_cast<size_t>(cols));
  for (int r = 0; r < cols; ++r) x[static_cast<size_t>(r)] = at(r, cols) / at(r, r);
  return x;
}

}  // namespace

std::string_view ToString(ScalingLayout layout) {
  switch (layout) {
    case ScalingLayout::kIndividual:
      return "individual";
    case ScalingLayout::kAveraged:
      return "auto_averaged";
    case ScalingLayout::kFixedConstant:
      return "fixed_constant";
    case ScalingLayout::kConstantAveraged:
      return "constant_averaged";
    case ScalingLayout::kFourier:
      return "fourier";
  }
  return "unknown";
}

void LayoutOptions::Validate() const {
  if (constant_scaling_threshold < 1) {
    ThrowBadInput(fmt::format("constant_scaling_threshold must be >= 1, found {}",
                              constant_scaling_threshold),
                  {}, "constant_scaling_threshold");
  }
  if (fourier_order < 1) {
    ThrowBadInput(fmt::format("fourier_order must be >= 1, found {}", fourier_order), {},
                  "fourier_order");
  }
}

ScalingLayout ResolveScalingLayout(const LayoutOptions& options, int n_phi) {
  options.Validate();
  switch (options.mode) {
    case PerAngleMode::kIndividual:
      return ScalingLayout::kIndividual;
    case PerAngleMode::kAuto:
      return n_phi >= options.constant_scaling_threshold ? ScalingLayout::kAveraged
                                                         : ScalingLayout::kIndividual;
    case PerAngleMode::kConstant:
      return ScalingLayout::kFixedConstant;
    case PerAngleMode::kConstantAveraged:
      return ScalingLayout::kConstantAveraged;
    case PerAngleMode::kFourier:
      return n_phi >= 1 + 2 * options.fourier_order ? ScalingLayout::kFourier
                                                    : ScalingLayout::kIndividual;
  }
  return ScalingLayout::kIndividual;
}

ParameterLayout::ParameterLayout(ScalingLayout layout, AnalysisMode mode, int n_angles,
                                 int n_scaling_opt)
    : layout_(layout), mode_(mode), index_(mode, n_angles) {
  if (n_angles < 1) ThrowBadInput("a parameter layout needs at least one angle");
  n_opt_ = n_scaling_opt + index_.n_phys;
  vary_.assign(static_cast<size_t>(index_.n_phys), true);
  n_phys_varying_ = index_.n_phys;
  b_.assign(static_cast<size_t>(index_.size() * n_opt_), 0.0);
  fixed_.assign(static_cast<size_t>(index_.size()), 0.0);
  CopyPhysicsBlock(n_scaling_opt);
}

void ParameterLayout::CopyPhysicsBlock(int n_scaling_opt) {
  for (int p = 0; p < index_.n_phys; ++p) {
    b_[static_cast<size_t>(index_.phys(p) * n_opt_ + n_scaling_opt + p)] = 1.0;
  }
}

ParameterLayout ParameterLayout::Individual(AnalysisMode mode, int n_angles) {
  ParameterLayout out(ScalingLayout::kIndividual, mode, n_angles, 2 * n_angles);
  for (int e = 0; e < 2 * n_angles; ++e) out.b_[static_cast<size_t>(e * out.n_opt_ + e)] = 1.0;
  out.names_ = out.index_.Names(mode);
  return out;
}

ParameterLayout ParameterLayout::Averaged(AnalysisMode mode, int n_angles) {
  ParameterLayout out(ScalingLayout::kAveraged, mode, n_angles, 2);
  for (int k = 0; k < n_angles; ++k) {
    out.b_[static_cast<size_t>(out.index_.contrast(k) * out.n_opt_ + 0)] = 1.0;
    out.b_[static_cast<size_t>(out.index_.offset(k) * out.n_opt_ + 1)] = 1.0;
  }
  out.names_ = {"contrast", "offset"};
  for (const auto& name : PhysicalParameterNames(mode)) out.names_.push_back(name);
  return out;
}

ParameterLayout ParameterLayout::FixedConstant(AnalysisMode mode,
                                               std::span<const ScalingEstimate> fixed) {
  ParameterLayout out(ScalingLayout::kFixedConstant, mode, static_cast<int>(fixed.size()), 0);
  for (int k = 0; k < out.index_.n_angles; ++k) {
    out.fixed_[static_cast<size_t>(out.index_.contrast(k))] =
        fixed[static_cast<size_t>(k)].contrast;
    out.fixed_[static_cast<size_t>(out.index_.offset(k))] = fixed[static_cast<size_t>(k)].offset;
  }
  out.names_ = PhysicalParameterNames(mode);
  return out;
}

ParameterLayout ParameterLayout::ConstantAveraged(AnalysisMode mode,
                                                  std::span<const ScalingEstimate> estimates) {
  std::vector<double> c, o;
  for (const auto& e : estimates) {
    c.push_back(e.contrast);
    o.push_back(e.offset);
  }
  const ScalingEstimate mean{NanMean(c), NanMean(o)};
  std::vector<ScalingEstimate> same(estimates.size(), mean);
  ParameterLayout out = FixedConstant(mode, same);
  out.layout_ = ScalingLayout::kConstantAveraged;
  return out;
}

ParameterLayout ParameterLayout::Fourier(AnalysisMode mode, std::span<const double> phi_deg,
                                         int order) {
  const int n = static_cast<int>(phi_deg.size());
  const int per_group = 1 + 2 * order;
  if (order < 1 || n < per_group) {
    ThrowBadInput(fmt::format("fourier per-angle scaling of order {} needs at least {} angles, "
                              "found {}",
                              order, per_group, n),
                  {}, "fourier_order");
  }
  ParameterLayout out(ScalingLayout::kFourier, mode, n, 2 * per_group);
  out.fourier_order_ = order;
  for (int k = 0; k < n; ++k) {
    const double phi_rad = phi_deg[static_cast<size_t>(k)] * std::numbers::pi / 180.0;
    for (int c = 0; c < per_group; ++c) {
      const double v = FourierBasis(c, phi_rad);
      out.b_[static_cast<size_t>(out.index_.contrast(k) * out.n_opt_ + c)] = v;
      out.b_[static_cast<size_t>(out.index_.offset(k) * out.n_opt_ + per_group + c)] = v;
    }
  }
  for (const char* group : {"contrast", "offset"}) {
    out.names_.push_back(fmt::format("{}_c0", group));
    for (int m = 1; m <= order; ++m) {
      out.names_.push_back(fmt::format("{}_cos{}", group, m));
      out.names_.push_back(fmt::format("{}_sin{}", group, m));
    }
  }
  for (const auto& name : PhysicalParameterNames(mode)) out.names_.push_back(name);
  return out;
}

ParameterLayout ParameterLayout::Create(ScalingLayout layout, AnalysisMode mode,
                                        std::span<const double> phi_deg,
                                        std::span<const ScalingEstimate> estimates,
                                        int fourier_order) {
  const int n = static_cast<int>(phi_deg.size());
  const bool needs_estimates =
      layout == ScalingLayout::kFixedConstant || layout == ScalingLayout::kConstantAveraged;
  if (needs_estimates && static_cast<int>(estimates.size()) != n) {
    ThrowBadInput(fmt::format("layout {} needs one scaling estimate per angle ({}), found {}",
                              ToString(layout), n, estimates.size()));
  }
  switch (layout) {
    case ScalingLayout::kIndividual:
      return Individual(mode, n);
    case ScalingLayout::kAveraged:
      return Averaged(mode, n);
    case ScalingLayout::kFixedConstant:
      return FixedConstant(mode, estimates);
    case ScalingLayout::kConstantAveraged:
      return ConstantAveraged(mode, estimates);
    case ScalingLayout::kFourier:
      return Fourier(mode, phi_deg, fourier_order);
  }
  ThrowInternal("unhandled scaling layout");
}

std::vector<double> ParameterLayout::Expand(std::span<const double> opt) const {
  if (static_cast<int>(opt.size()) != n_opt_) {
    ThrowBadInput(fmt::format("layout {} expects {} optimiser parameters, found {}",
                              ToString(layout_), n_opt_, opt.size()));
  }
  std::vector<double> out(fixed_);
  for (int r = 0; r < num_expanded(); ++r) {
    for (int c = 0; c < n_opt_; ++c)
      out[static_cast<size_t>(r)] += B(r, c) * opt[static_cast<size_t>(c)];
  }
  return out;
}

std::vector<double> ParameterLayout::FromExpanded(std::span<const double> expanded) const {
  if (static_cast<int>(expanded.size()) != num_expanded()) {
    ThrowBadInput(
        fmt::format("expected {} expanded parameters, found {}", num_expanded(), expanded.size()));
  }
  const int n = index_.n_angles;
  std::vector<double> out;
  const auto contrasts = expanded.subspan(0, static_cast<size_t>(n));
  const auto offsets = expanded.subspan(static_cast<size_t>(n), static_cast<size_t>(n));
  switch (layout_) {
    case ScalingLayout::kIndividual:
      out.assign(expanded.begin(), expanded.begin() + 2 * n);
      break;
    case ScalingLayout::kAveraged:
      out = {NanMean(contrasts), NanMean(offsets)};
      break;
    case ScalingLayout::kFixedConstant:
    case ScalingLayout::kConstantAveraged:
      break;
    case ScalingLayout::kFourier: {
      const int per_group = 1 + 2 * fourier_order_;
      std::vector<double> basis(static_cast<size_t>(n * per_group));
      for (int k = 0; k < n; ++k) {
        for (int c = 0; c < per_group; ++c) {
          basis[static_cast<size_t>(k * per_group + c)] = B(index_.contrast(k), c);
        }
      }
      out = LeastSquares(basis, n, per_group, contrasts);
      const auto o = LeastSquares(basis, n, per_group, offsets);
      out.insert(out.end(), o.begin(), o.end());
      break;
    }
  }
  for (int p = 0; p < index_.n_phys; ++p) {
    if (PhysicalVaries(p)) out.push_back(expanded[static_cast<size_t>(index_.phys(p))]);
  }
  return out;
}

NormalEquations ParameterLayout::ToOptimiser(const NormalEquations& expanded) const {
  const int e = num_expanded();
  if (expanded.size != e) {
    ThrowBadInput(
        fmt::format("normal equations of size {} do not match layout size {}", expanded.size, e));
  }
  NormalEquations out(n_opt_);
  out.chi2 = expanded.chi2;
  // T = (JᵀJ)·B (e × n_opt), then Bᵀ·T.
  std::vector<double> t(static_cast<size_t>(e * n_opt_), 0.0);
  for (int r = 0; r < e; ++r) {
    for (int m = 0; m < e; ++m) {
      const double v = expanded.JtJ(r, m);
      if (v == 0.0) continue;
      for (int c = 0; c < n_opt_; ++c) t[static_cast<size_t>(r * n_opt_ + c)] += v * B(m, c);
    }
  }
  for (int a = 0; a < n_opt_; ++a) {
    for (int r = 0; r < e; ++r) {
      const double bra = B(r, a);
      if (bra == 0.0) continue;
      for (int c = 0; c < n_opt_; ++c)
        out.JtJ(a, c) += bra * t[static_cast<size_t>(r * n_opt_ + c)];
      out.jtr[static_cast<size_t>(a)] += bra * expanded.jtr[static_cast<size_t>(r)];
    }
  }
  // Symmetrise exactly (the two triangles are computed in different orders).
  for (int a = 0; a < n_opt_; ++a) {
    for (int c = a + 1; c < n_opt_; ++c) out.JtJ(c, a) = out.JtJ(a, c);
  }
  return out;
}

std::vector<double> ParameterLayout::JacobianToOptimiser(std::span<const double> j_expanded,
                                                         int rows) const {
  const int e = num_expanded();
  if (static_cast<int>(j_expanded.size()) != rows * e) {
    ThrowBadInput(
        fmt::format("Jacobian has {} entries, expected {}·{}", j_expanded.size(), rows, e));
  }
  std::vector<double> out(static_cast<size_t>(rows * n_opt_), 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int m = 0; m < e; ++m) {
      const double v = j_expanded[static_cast<size_t>(r * e + m)];
      if (v == 0.0) continue;
      for (int c = 0; c < n_opt_; ++c) out[static_cast<size_t>(r * n_opt_ + c)] += v * B(m, c);
    }
  }
  return out;
}

std::vector<double> ParameterLayout::ExpandCovariance(std::span<const double> cov_opt) const {
  if (static_cast<int>(cov_opt.size()) != n_opt_ * n_opt_) {
    ThrowBadInput(fmt::format("covariance has {} entries, expected {}²", cov_opt.size(), n_opt_));
  }
  const int e = num_expanded();
  std::vector<double> t(static_cast<size_t>(e * n_opt_), 0.0);  // B·C
  for (int r = 0; r < e; ++r) {
    for (int m = 0; m < n_opt_; ++m) {
      const double b = B(r, m);
      if (b == 0.0) continue;
      for (int c = 0; c < n_opt_; ++c) {
        t[static_cast<size_t>(r * n_opt_ + c)] += b * cov_opt[static_cast<size_t>(m * n_opt_ + c)];
      }
    }
  }
  std::vector<double> out(static_cast<size_t>(e * e), 0.0);  // (B·C)·Bᵀ
  for (int r = 0; r < e; ++r) {
    for (int s = 0; s < e; ++s) {
      double v = 0.0;
      for (int c = 0; c < n_opt_; ++c) v += t[static_cast<size_t>(r * n_opt_ + c)] * B(s, c);
      out[static_cast<size_t>(r * e + s)] = v;
    }
  }
  return out;
}

Bounds ParameterLayout::OptimiserBounds(const Bounds& expanded) const {
  const int e = num_expanded();
  if (static_cast<int>(expanded.lower.size()) != e ||
      static_cast<int>(expanded.upper.size()) != e) {
    ThrowBadInput(fmt::format("expected {} expanded bounds, found {} / {}", e,
                              expanded.lower.size(), expanded.upper.size()));
  }
  const int n = index_.n_angles;
  Bounds out;
  auto add = [&](double lo, double hi) {
    out.lower.push_back(lo);
    out.upper.push_back(hi);
  };
  switch (layout_) {
    case ScalingLayout::kIndividual:
      for (int m = 0; m < 2 * n; ++m)
        add(expanded.lower[static_cast<size_t>(m)], expanded.upper[static_cast<size_t>(m)]);
      break;
    case ScalingLayout::kAveraged:
      for (int group = 0; group < 2; ++group) {
        const auto lo = expanded.lower.begin() + group * n;
        const auto hi = expanded.upper.begin() + group * n;
        add(*std::min_element(lo, lo + n), *std::max_element(hi, hi + n));
      }
      break;
    case ScalingLayout::kFixedConstant:
    case ScalingLayout::kConstantAveraged:
      break;
    case ScalingLayout::kFourier:
      add(kFourierContrastRange.lower, kFourierContrastRange.upper);
      for (int m = 0; m < 2 * fourier_order_; ++m) add(-0.2, 0.2);
      add(kFourierOffsetRange.lower, kFourierOffsetRange.upper);
      for (int m = 0; m < 2 * fourier_order_; ++m) add(-0.3, 0.3);
      break;
  }
  for (int p = 0; p < index_.n_phys; ++p) {
    if (!PhysicalVaries(p)) continue;
    add(expanded.lower[static_cast<size_t>(index_.phys(p))],
        expanded.upper[static_cast<size_t>(index_.phys(p))]);
  }
  return out;
}

ParameterLayout ParameterLayout::WithHeldPhysics(const std::vector<bool>& vary,
                                                 std::span<const double> values) const {
  const int n_phys = index_.n_phys;
  if (static_cast<int>(vary.size()) != n_phys || static_cast<int>(values.size()) != n_phys) {
    ThrowBadInput(fmt::format("held physics: expected {} flags and values, found {} / {}", n_phys,
                              vary.size(), values.size()));
  }
  ParameterLayout out(*this);
  // The physical columns are the last num_physical_varying() ones, in physical order.
  const int first_phys_col = n_opt_ - n_phys_varying_;
  std::vector<int> keep;  // old columns that stay
  for (int c = 0; c < first_phys_col; ++c) keep.push_back(c);
  int col = first_phys_col;
  for (int p = 0; p < n_phys; ++p) {
    if (!PhysicalVaries(p)) continue;
    const bool stays = vary[static_cast<size_t>(p)];
    if (stays) keep.push_back(col);
    ++col;
  }
  if (static_cast<int>(keep.size()) == n_opt_) return out;
  const int e = num_expanded();
  out.n_opt_ = static_cast<int>(keep.size());
  out.b_.assign(static_cast<size_t>(e * out.n_opt_), 0.0);
  for (int r = 0; r < e; ++r) {
    for (int c = 0; c < out.n_opt_; ++c) {
      out.b_[static_cast<size_t>(r * out.n_opt_ + c)] = B(r, keep[static_cast<size_t>(c)]);
    }
  }
  out.names_.clear();
  for (int c : keep) out.names_.push_back(names_[static_cast<size_t>(c)]);
  for (int p = 0; p < n_phys; ++p) {
    if (vary[static_cast<size_t>(p)] && PhysicalVaries(p)) continue;
    if (PhysicalVaries(p)) {
      const double v = values[static_cast<size_t>(p)];
      if (!std::isfinite(v)) {
        ThrowBadInput(fmt::format("held parameter {} needs a finite value, found {}",
                                  PhysicalParameterNames(mode_)[static_cast<size_t>(p)], v));
      }
      out.fixed_[static_cast<size_t>(index_.phys(p))] = v;
    }
    out.vary_[static_cast<size_t>(p)] = false;
  }
  out.n_phys_varying_ = static_cast<int>(std::count(out.vary_.begin(), out.vary_.end(), true));
  return out;
}

}  // namespace homodyne::model
