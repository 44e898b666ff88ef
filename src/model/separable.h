// Separable ("factorised") evaluation for the fast kernel (private to src/model): the one
// place that decides where a factorised form may replace the direct per-point evaluation.
// Used only with exact_transcendentals = false and only for row blocks whose columns all lie
// right of the diagonal (j > i), where the prefix sums satisfy C[j] ≥ C[i].
//
// Shear phase: sin/cos of x = a·I_Γ by angle addition from per-(angle, time) tables, to first
// order in the smooth-abs shift ψ; a point is separable where the bound SeparableSineBound
// puts its c2 within kSeparableC2Tolerance of the direct value, |x| ≥ kSeparableMinPhase and
// |ψ| ≤ kSeparableMaxShift. The bound falls along a row, so the separable columns are a
// suffix of the block (SeparableStart).
// Diffusion factor: g1_diff = P[j]·R·(1 − w + w²/2) from per-time and per-(row, pivot span)
// exponentials; a whole span is factorised when its worst-end bound is within
// kSeparableDiffusionC2Tolerance and no exponent can overflow or reach the −700 clip, decided
// over the span's whole extent so that every pass decides alike.
// docs/model.md ("Separable evaluation") derives both bounds.
#pragma once

namespace homodyne::model::detail {

inline constexpr double kSeparableMinPhase = 1.0;       // |x| below this: direct evaluation
inline constexpr double kSeparableMaxShift = 1e-6;      // |a·δ| above this: direct evaluation
inline constexpr double kSeparableC2Tolerance = 1e-15;  // bound on the added |Δc2|

// Angle-independent per-column inputs of one block of row i (every column j > i).
struct SeparableColumns {
  const double* g1d = nullptr;    // g1_diff (as evaluated directly)
  const double* cgsum = nullptr;  // C_Γ[i] + C_Γ[j]
  const double* shift = nullptr;  // δ = 1e-12/(I_Γ + |ΔC_Γ|)
};

// The bound at one point: phase x = a·I_Γ, contrast of the angle. False for non-finite input.
bool SeparableBoundHolds(double x, double a, double contrast, double g1d, double cgsum,
                         double shift);

// First column c in [0, n] from which on the bound holds (n: none), for the phases
// x = a·ig[c] (ig = I_Γ per column).
int SeparableStart(const double* ig, double a, double contrast, const SeparableColumns& cols,
                   int n);
// The same from a guess of it (the previous row's boundary, shifted to this block): two
// tests when the boundary is at the guess or next to it (a guess ≥ n: one test when no column
// holds), else a binary search; a guess < 0 is SeparableStart. Any guess gives its result.
int SeparableStartFrom(const double* ig, double a, double contrast, const SeparableColumns& cols,
                       int n, int guess);

// One (angle, row) of the separable path. tab_sin/tab_cos point at the angle's table entries
// of column 0 (time j0), si/ci are its entries at the row i; shift and xs are per column.
struct SeparableRow {
  const double* tab_sin = nullptr;
  const double* tab_cos = nullptr;
  double si = 0.0, ci = 0.0;
  double a = 0.0;                  // a_k = sp·cos(π/180(φ0 − φ_k))
  double inv_a = 0.0;              // 1/a
  const double* shift = nullptr;   // δ per column
  const double* inv_ig = nullptr;  // 1/I_Γ per column
  // g1_diff/I_Γ² per column, for the point loops' scaled form (point_terms_impl.h):
  // g1 = g1_diff·sinc² = (g1_diff/I_Γ²)·(sin x/a)², with sin x/a from the table entries and
  // the row's ci/a, si/a (one product per point fewer than ψ = a·δ, 1/x = (1/a)(1/I_Γ),
  // sinc = sin x·(1/x), sinc², g1_diff·sinc²).
  const double* g1d_inv_ig2 = nullptr;
};

// sin x and cos x of a column by the angle-addition formula, first order in ψ = a·δ:
// sin x ≈ s0 + ψ·c0 = S[j]·A + K[j]·B and cos x ≈ c0 − ψ·s0 = K[j]·A − S[j]·B with
// A = K[i] + ψ·S[i], B = ψ·K[i] − S[i] (five products for the sine instead of six), and from
// them with 1/x: sinc² and d sinc²/dx = 2·sinc·(cos x − sinc)·(1/x). T is double (one
// column) or a vector of columns (the kernel's point loops): the same expressions, so the
// same values.
template <typename T>
__attribute__((always_inline)) inline void SeparableFactors(T tab_sin, T tab_cos, T psi, T ci, T si,
                                                            T inv_x, T& s, T& ds) {
  const T ca = ci + psi * si;
  const T cb = psi * ci - si;
  const T sn = tab_sin * ca + tab_cos * cb;
  const T cs = tab_cos * ca - tab_sin * cb;
  const T sinc = sn * inv_x;
  s = sinc * sinc;
  ds = (sinc + sinc) * ((cs - sinc) * inv_x);  // sinc + sinc = 2·sinc exactly
}

// B of the header: the bound on |sin − sin x| of SeparableFactors at a point with
// cgsum = C_Γ[i] + C_Γ[j], phase x and ψ = a·δ.
inline double SeparableSineBound(double a, double cgsum, double x, double psi) {
  constexpr double kEps = 1.1102230246251565e-16;  // 2^-53
  const double apsi = psi < 0 ? -psi : psi;
  return 2.0 * kEps * ((a < 0 ? -a : a) * cgsum + 4.0 * (x < 0 ? -x : x) + 16.0) +
         0.5 * apsi * apsi * (1.0 + apsi);
}

// For c in [begin, n) (columns that passed the bound, so |x| ≥ 1): sin x and cos x by the
// angle-addition formula, then s[c] = sinc², sinc = sin x · (1/x), and
// ds[c] = 2·sinc·(cos x − sinc)·(1/x) — the direct branches of shear_factors.cpp, with the
// division replaced by 1/x = (1/a)·(1/I_Γ) (1/I_Γ once per column for all angles; ≤ 4ε
// relative on sinc, covered by the bound's constant).
void SeparableShearFactors(const SeparableRow& row, double* s, int begin, int n);
void SeparableShearFactorsWithDerivative(const SeparableRow& row, double* s, double* ds, int begin,
                                         int n);

inline constexpr int kDiffusionPivotSpan = 64;
inline constexpr double kSeparableDiffusionC2Tolerance = 5e-15;  // bound on the added |Δc2|
inline constexpr double kSeparableMaxExponent = 600.0;           // |exponent| of P and R
inline constexpr double kSeparableMinLogG1 = -690.0;             // clip at −700 stays inactive

// The span test. c_i, c_p, c_last = C_D at the row, the pivot and the span's last column;
// log_g1_last = −wq·I_D at the last column; g1d_first ≥ g1_diff at the first column;
// contrast_scale = max(1, max_k |contrast_k|). False for non-finite input.
bool DiffusionSpanHolds(double wq, double c_i, double c_p, double c_last, double log_g1_last,
                        double g1d_first, double contrast_scale);

// g1d[c] = pivot_table[c]·r·(1 − w + w²/2), w = wq·δ_D[c], for c in [begin, end).
// pivot_table points at P of column 0; shift_d[c] = δ_D.
void SeparableDiffusion(const double* pivot_table, double r, double wq, const double* shift_d,
                        double* g1d, int begin, int end);

}  // namespace homodyne::model::detail
