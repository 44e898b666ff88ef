// Numerical guards of the homodyne model (physics spec §1.4), shared by every evaluator.
#pragma once

namespace homodyne::model {

inline constexpr double kTimeFloorMin = 1e-8;     // eps = max(dt_inf/2, 1e-8) (strict >)
inline constexpr double kRateFloor = 1e-10;       // D(t), γ̇(t): where(f > 1e-10, f, 1e-10)
inline constexpr double kSmoothAbsEps2 = 1e-12;   // I = sqrt(Δ² + 1e-12)
inline constexpr double kLogG1Min = -700.0;       // clip(−wq·I, −700, 0)
inline constexpr double kSincTaylorBound = 1e-4;  // Taylor branch of sinc for |x| < 1e-4
inline constexpr double kG1Floor = 1e-10;         // g1: where(g1 > 1e-10, g1, 1e-10)
inline constexpr double kDefaultSigma = 0.01;     // residual scale r = (c2_exp − c2)/σ

// where(x > a, x, a): the floor as the code writes it (NaN → a).
inline double FloorAt(double x, double a) { return x > a ? x : a; }

}  // namespace homodyne::model
