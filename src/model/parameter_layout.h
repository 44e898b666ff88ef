// Per-angle scaling layouts (physics spec §1.9): how the optimiser vector maps to the
// expanded vector [contrast_0…, offset_0…, physical…] (expanded_parameters.h) that the
// model kernel works in.
//
// The map is affine, expanded = B·opt + fixed, with B constant, so
//   J_opt = J_expanded·B,  JᵀJ_opt = Bᵀ(JᵀJ)B,  Jᵀr_opt = BᵀJᵀr,  Cov_expanded = B·Cov_opt·Bᵀ.
//
// Optimiser vector per layout (n = angles, p = physical count):
//   individual        [contrast_0…n−1, offset_0…n−1, physical]           2n + p
//   averaged          [contrast, offset, physical] (replicated to angles)   2 + p
//   fixed_constant    [physical]; per-angle contrast/offset fixed           p
//   constant_averaged [physical]; one fixed contrast/offset for all angles  p
//   fourier           [contrast c0, cos1, sin1, …, cosK, sinK, offset …, physical]
//                     contrast(φ) = c0 + Σ_k c_k cos kφ + s_k sin kφ, φ in radians  2(1+2K) + p
//
// A physical parameter held at a value (WithHeldPhysics) has no optimiser column: its row
// of B is zero and its value is in `fixed`, so p above counts the varying ones only and
// the covariance gives it a zero row and column.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/analysis_mode.h"
#include "model/expanded_parameters.h"
#include "model/normal_equations.h"
#include "model/scaling_estimator.h"

namespace homodyne::model {

// Requested mode (config value of per_angle_mode).
enum class PerAngleMode { kIndividual, kAuto, kConstant, kFourier, kConstantAveraged };
// Resolved layout.
enum class ScalingLayout { kIndividual, kAveraged, kFixedConstant, kConstantAveraged, kFourier };

std::string_view ToString(ScalingLayout layout);

struct LayoutOptions {
  PerAngleMode mode = PerAngleMode::kAuto;
  int constant_scaling_threshold = 3;  // auto → averaged when n_phi ≥ threshold
  int fourier_order = 2;               // K

  void Validate() const;  // threshold ≥ 1, order ≥ 1
};

// auto → averaged (n_phi ≥ threshold) or individual; fourier → fourier if n_phi ≥ 1 + 2K,
// else individual; constant → fixed_constant. (NLSQ static always uses individual — that
// policy belongs to the caller.)
ScalingLayout ResolveScalingLayout(const LayoutOptions& options, int n_phi);

struct Bounds {
  std::vector<double> lower, upper;
};

// xpcsjax's contrast and offset bounds of its Fourier helper: the fourier layout's c0 and o0
// (OptimiserBounds), and two_component's individual contrast_k/offset_k (heterodyne spec §3;
// the caller applies them, see ApplyTwoComponentIndividualBounds in config_bridge.h).
struct ScalingRange {
  double lower = 0.0;
  double upper = 0.0;
};
inline constexpr ScalingRange kFourierContrastRange{0.1, 0.8};
inline constexpr ScalingRange kFourierOffsetRange{0.5, 1.5};

class ParameterLayout {
 public:
  static ParameterLayout Individual(AnalysisMode mode, int n_angles);
  static ParameterLayout Averaged(AnalysisMode mode, int n_angles);
  // Per-angle fixed values (e.g. quantile estimates).
  static ParameterLayout FixedConstant(AnalysisMode mode, std::span<const ScalingEstimate> fixed);
  // Fixed values = averages of the per-angle estimates (NaN-skipping mean).
  static ParameterLayout ConstantAveraged(AnalysisMode mode,
                                          std::span<const ScalingEstimate> estimates);
  static ParameterLayout Fourier(AnalysisMode mode, std::span<const double> phi_deg, int order);
  // Builds the resolved layout; `estimates` (one per angle) are needed by the fixed layouts.
  static ParameterLayout Create(ScalingLayout layout, AnalysisMode mode,
                                std::span<const double> phi_deg,
                                std::span<const ScalingEstimate> estimates = {},
                                int fourier_order = 2);

  ScalingLayout layout() const { return layout_; }
  AnalysisMode mode() const { return mode_; }
  const ExpandedIndex& expanded_index() const { return index_; }
  int num_optimised() const { return n_opt_; }
  int num_expanded() const { return index_.size(); }
  const std::vector<std::string>& names() const { return names_; }

  // B (num_expanded × num_optimised, row-major) and the fixed part.
  const std::vector<double>& B() const { return b_; }
  double B(int row, int col) const { return b_[static_cast<size_t>(row * n_opt_ + col)]; }
  const std::vector<double>& fixed() const { return fixed_; }

  // expanded = B·opt + fixed.
  std::vector<double> Expand(std::span<const double> opt) const;
  // An optimiser vector from an expanded one: physics copied; individual copies, averaged
  // takes NaN-skipping means, fourier least-squares fits the per-angle values, fixed layouts
  // drop the scaling.
  std::vector<double> FromExpanded(std::span<const double> expanded) const;
  // Normal equations in optimiser space: Bᵀ(JᵀWJ)B, BᵀJᵀWr, χ² unchanged.
  NormalEquations ToOptimiser(const NormalEquations& expanded) const;
  // Jacobian rows: J_opt = J_expanded·B (rows × num_expanded → rows × num_optimised).
  std::vector<double> JacobianToOptimiser(std::span<const double> j_expanded, int rows) const;
  // Cov_expanded = B·Cov_opt·Bᵀ (row-major square matrices).
  std::vector<double> ExpandCovariance(std::span<const double> cov_opt) const;
  // Optimiser bounds from expanded bounds: individual copies; averaged uses
  // [min lower, max upper] over angles; fourier uses the fixed coefficient bounds
  // (c0 ∈ [0.1, 0.8], contrast harmonics ∈ [−0.2, 0.2], o0 ∈ [0.5, 1.5], offset
  // harmonics ∈ [−0.3, 0.3]); fixed layouts keep the physical bounds only.
  Bounds OptimiserBounds(const Bounds& expanded) const;

  // This layout with the physical parameters p where vary[p] is false held at values[p]
  // (both of size num_physical): their optimiser columns and names are dropped. All true:
  // an identical copy.
  ParameterLayout WithHeldPhysics(const std::vector<bool>& vary,
                                  std::span<const double> values) const;
  // Physical parameter p (0 … n_phys−1) is optimised (not held).
  bool PhysicalVaries(int p) const { return vary_[static_cast<size_t>(p)]; }
  int num_physical_varying() const { return n_phys_varying_; }
  int num_physical_held() const { return index_.n_phys - n_phys_varying_; }

 private:
  ParameterLayout(ScalingLayout layout, AnalysisMode mode, int n_angles, int n_scaling_opt);
  void CopyPhysicsBlock(int n_scaling_opt);

  ScalingLayout layout_ = ScalingLayout::kIndividual;
  AnalysisMode mode_ = AnalysisMode::kStatic;
  ExpandedIndex index_;
  int n_opt_ = 0;
  int fourier_order_ = 0;
  std::vector<double> b_;
  std::vector<double> fixed_;
  std::vector<std::string> names_;
  std::vector<bool> vary_;  // per physical parameter
  int n_phys_varying_ = 0;
};

}  // namespace homodyne::model
