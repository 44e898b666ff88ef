// Reference analytic derivatives of c2 (physics spec §1.2) with respect to every physical
// parameter and the per-angle contrast/offset, evaluated point by point with the plain
// chain rule. Floors follow JAX `where` semantics: the derivative of the selected branch,
// i.e. 0 wherever a floor or the log clip is active. Oracle for the fast kernel.
#pragma once

#include <span>
#include <vector>

#include "model/analysis_mode.h"
#include "model/expanded_parameters.h"
#include "model/geometry.h"

namespace homodyne::model::reference {

class ReferenceGradient {
 public:
  // `params` is the expanded vector [contrast_k…, offset_k…, physical…] (expanded_parameters.h).
  ReferenceGradient(AnalysisMode mode, const Geometry& geometry, std::vector<double> t,
                    std::vector<double> phi_deg, std::span<const double> params);

  const ExpandedIndex& index() const { return index_; }

  // c2 of angle k at times (t[i], t[j]); writes dc2/dθ (expanded order) into `grad`,
  // which must have index().size() entries.
  double C2(int k, int i, int j, std::span<double> grad) const;

 private:
  // Per-time arrays of one rate f(t) = a·t^e + o (floored) and its cumulative trapezoid,
  // with the derivatives of the trapezoid with respect to (a, e, o).
  struct Rate {
    std::vector<double> cum;
    std::vector<double> dcum[3];
  };
  static Rate BuildRate(const std::vector<double>& ts, double a, double e, double o);

  AnalysisMode mode_;
  Geometry geometry_;
  std::vector<double> t_;
  std::vector<double> phi_deg_;
  std::vector<double> params_;
  ExpandedIndex index_;
  Rate diffusion_;
  Rate shear_;
};

}  // namespace homodyne::model::reference
