// Reference implementation of the homodyne c2 model (physics spec §1.2), written as
// literally as possible: full n×n matrices per angle, every guard exactly as specified.
// It is slow and serves as the oracle for the fast kernel and the derivatives.
#pragma once

#include <span>
#include <vector>

#include "model/analysis_mode.h"
#include "model/geometry.h"

namespace homodyne::model::reference {

// Step 1: eps = 0.5·|t[min(1,n−1)] − t[0]| if that is > 1e-8, else 1e-8.
double TimeFloor(std::span<const double> t);
// ts[m] = t[m] if t[m] > eps else eps.
std::vector<double> FlooredTimes(std::span<const double> t);
// Step 2: f[m] = amplitude·ts[m]^exponent + offset, then where(f > 1e-10, f, 1e-10).
std::vector<double> RateOnGrid(std::span<const double> ts, double amplitude, double exponent,
                               double offset);
// Step 3: C[0] = 0, C[m] = C[m−1] + ½(f[m−1] + f[m]) (in steps, no dt).
std::vector<double> CumulativeTrapezoid(std::span<const double> f);
// Step 4: I[i,j] = sqrt((C[i] − C[j])² + 1e-12), row-major n×n.
std::vector<double> SmoothAbsDifference(std::span<const double> c);
// Unnormalised sinc: 1 − x²/6 + x⁴/120 for |x| < 1e-4, else sin(x)/x.
double SincU(double x);

struct ModelInput {
  AnalysisMode mode = AnalysisMode::kStatic;
  Geometry geometry;
  std::vector<double> t;         // time grid [s]
  std::vector<double> phi_deg;   // detector angles [deg]
  std::vector<double> physical;  // 3 or 7 physical parameters
  std::vector<double> contrast;  // one per angle
  std::vector<double> offset;    // one per angle
};

// Every intermediate of §1.2 (row-major n×n matrices).
struct ModelEvaluation {
  int n = 0;
  std::vector<double> ts, rate_d, rate_g, cum_d, cum_g;
  std::vector<double> integral_d;  // I_D
  std::vector<double> integral_g;  // I_G (laminar only, else empty)
  std::vector<double> g1_diff;
  std::vector<std::vector<double>> shear_arg;  // Φ_k (laminar only)
  std::vector<std::vector<double>> sinc2;      // S_k (all 1 for static)
  std::vector<std::vector<double>> g1;         // floored g1_k
  std::vector<std::vector<double>> c2;         // c2_k

  double C2(int k, int i, int j) const { return c2[k][static_cast<size_t>(i * n + j)]; }
};

// Validates the input shapes (bad-input Error otherwise) and evaluates the model.
ModelEvaluation Evaluate(const ModelInput& input);

}  // namespace homodyne::model::reference
