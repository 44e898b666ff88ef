// Map between NUTS's unconstrained coordinate u and a parameter x with bounds:
//   [a, b]:   x = a + (b − a)·s(u), s the logistic function;
//   [a, ∞):   x = a + exp(u);
//   (−∞, ∞):  x = u.
// The sampler's target in u is log p(x(u)) + log|dx/du|; both pieces and their
// u-derivatives are provided.
#pragma once

namespace homodyne::cmc {

class BoundedTransform {
 public:
  BoundedTransform() = default;                  // unbounded
  BoundedTransform(double lower, double upper);  // ±infinity allowed (upper = ∞: half-bounded)

  double ToConstrained(double u) const;
  double ToUnconstrained(double x) const;  // x strictly inside the bounds
  double DxDu(double u) const;
  double LogJacobian(double u) const;   // log|dx/du|
  double DLogJacobian(double u) const;  // d/du log|dx/du|

 private:
  enum class Kind { kUnbounded, kLowerOnly, kInterval };
  Kind kind_ = Kind::kUnbounded;
  double lower_ = 0.0;
  double upper_ = 0.0;
};

}  // namespace homodyne::cmc
