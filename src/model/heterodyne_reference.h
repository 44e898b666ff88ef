// Reference implementation of the two-component ("heterodyne") model of xpcsjax (He et al.,
// PNAS 2025; docs/model.md, "Two-component model"): a reference population and a flowing
// sample population with a time-dependent sample fraction, 14 physical parameters plus
// per-angle contrast and offset. Written as literally as the model is defined — full n×n
// matrices per angle, every guard as specified — it is slow and is the oracle for the fast
// kernel, the derivatives and the synthetic data.
//
// Per angle φ_k (degrees), on the time grid t (seconds; the fit grid is t_m = (m+1)·dt):
//   pow(t,e) = max(t,1e-10)^e for t > 0, 0 for t ≤ 0
//   J_r = max(D0_ref·pow(t,alpha_ref) + D_offset_ref, 0), J_s likewise (sample),
//   v   = v0·pow(t,v_beta) + v_offset (no floor)
//   P[0] = 0, P[m] = dt·Σ_{r<m} ½(f[r] + f[r+1])           for f = J_r, J_s, v
//   I_r = sqrt((P_r[j] − P_r[i])² + 1e-12), I_s likewise;  h = exp(clip(−½q²I, −700, 0))
//   θ_k = q·cos((φ_k + phi0_het)·π/180)·(P_v[j] − P_v[i])
//   x = f0·exp(clip(f1·(t − f2), −700, 700)) + f3,  f_s = S(x), f_r = 1 − f_s with the soft
//   clip S(x) = 1 − sp(50(1 − y))/50, y = sp(50x)/50, sp(z) = max(z,0) + log1p(exp(−|z|))
//   R = (f_r,i f_r,j)² h_r²,  S = (f_s,i f_s,j)² h_s²,  X = 2 (f_r f_s)_i (f_r f_s)_j h_r h_s cos
//   θ_k n = max((f_s,i² + f_r,i²)(f_s,j² + f_r,j²), 1e-10) c2 = offset_k + contrast_k·(R + S + X)/n
#pragma once

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace homodyne::model::heterodyne {

inline constexpr int kNumPhysical = 14;

// Indices of the physical parameters (canonical order).
namespace het {
inline constexpr int kD0Ref = 0;
inline constexpr int kAlphaRef = 1;
inline constexpr int kDOffsetRef = 2;
inline constexpr int kD0Sample = 3;
inline constexpr int kAlphaSample = 4;
inline constexpr int kDOffsetSample = 5;
inline constexpr int kV0 = 6;
inline constexpr int kVBeta = 7;
inline constexpr int kVOffset = 8;
inline constexpr int kF0 = 9;
inline constexpr int kF1 = 10;
inline constexpr int kF2 = 11;
inline constexpr int kF3 = 12;
inline constexpr int kPhi0Het = 13;
}  // namespace het

// The model's guards (see the formulas above).
inline constexpr double kPowerFloor = 1e-10;  // power-law base floor
inline constexpr double kSmoothAbs = 1e-12;   // sqrt(Δ² + kSmoothAbs)
inline constexpr double kExpClip = 700.0;     // exponent clips
inline constexpr double kNormFloor = 1e-10;   // normalisation floor

// Canonical names in order (D0_ref … phi0_het).
const std::array<std::string, kNumPhysical>& ParameterNames();
// Index of a name or of an alias (beta → v_beta, phi0 → phi0_het); −1 when unknown.
int ParameterIndex(std::string_view name);

// The model's primitives, exactly as specified.
double PowerTerm(double t, double exponent);
double Softplus(double z);
double SoftClip(double x);            // S(x)
double SoftClipDerivative(double x);  // dS/dx = σ(50x)·σ(50(1 − y))
double SampleFraction(double t, std::span<const double> physical);  // f_s(t)

// P[0] = 0, P[m] = dt·Σ_{r<m} ½(f[r] + f[r+1]) (the half-sums summed, then times dt).
std::vector<double> TrapezoidPrefix(std::span<const double> f, double dt);

// Derivative of max(raw, 0) with respect to raw: JAX splits a tie evenly.
inline double MaxZeroSlope(double raw) { return raw > 0.0 ? 1.0 : (raw < 0.0 ? 0.0 : 0.5); }

// The per-time tables of one parameter vector on grid t: the prefixes P_r, P_s, P_v and the
// sample fraction f_s, and (with `derivatives`) their derivatives — dp[r][d] of prefix r with
// respect to its (amplitude, exponent, offset), dfs[d] with respect to (f0, f1, f2, f3), 0
// where a floor or clip is active. O(N); shared by HeterodyneGradient and the kernel.
struct TimeTables {
  std::vector<double> p[3];
  std::vector<double> dp[3][3];
  std::vector<double> fs;
  std::vector<double> dfs[4];
};
TimeTables BuildTimeTables(std::span<const double> t, double dt, std::span<const double> physical,
                           bool derivatives);

struct HeterodyneInput {
  std::vector<double> t;         // time grid [s]
  double dt = 0.1;               // trapezoid step [s] (only the sums use it)
  double q = 0.0054;             // wavevector [1/Å]
  std::vector<double> phi_deg;   // detector angles [deg]
  std::vector<double> physical;  // the 14 parameters in canonical order
  std::vector<double> contrast;  // one per angle
  std::vector<double> offset;    // one per angle
};

// Every intermediate (row-major n×n matrices).
struct HeterodyneEvaluation {
  int n = 0;
  std::vector<double> rate_ref, rate_sample, velocity;  // J_r, J_s, v on the grid
  std::vector<double> p_ref, p_sample, p_velocity;      // P_r, P_s, P_v
  std::vector<double> fraction_sample;                  // f_s
  std::vector<double> half_ref, half_sample;            // h_r, h_s
  std::vector<std::vector<double>> c2;                  // c2_k

  double C2(int k, int i, int j) const {
    return c2[static_cast<std::size_t>(k)][static_cast<std::size_t>(i * n + j)];
  }
};

// Validates the input shapes (bad-input Error naming what is wrong) and evaluates the model.
HeterodyneEvaluation Evaluate(const HeterodyneInput& input);

// c2 and its analytic derivatives at one point, by the plain chain rule. Guards follow JAX's
// semantics: 0 where a floor or clip is active, ½ of each side at an exact tie of max(·, 0).
// Parameters in the expanded order [contrast_k…, offset_k…, physical (14)].
class HeterodyneGradient {
 public:
  HeterodyneGradient(const HeterodyneInput& geometry_and_grid, std::span<const double> expanded);

  int num_parameters() const { return 2 * n_angles_ + kNumPhysical; }
  // c2 of angle k at (t[i], t[j]); dc2/dθ into `grad` (num_parameters() entries).
  double C2(int k, int i, int j, std::span<double> grad) const;

 private:
  int n_ = 0, n_angles_ = 0;
  double q_ = 0.0;
  std::vector<double> phi_deg_, contrast_, offset_;
  double phi0_ = 0.0;
  TimeTables tab_;  // with derivatives
};

}  // namespace homodyne::model::heterodyne
