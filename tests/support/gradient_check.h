// Gradient of a log density against finite differences (five-point stencil, step 1e-5 in
// every coordinate): |analytic − finite difference| ≤ rel·(1 + |finite difference|).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nuts/log_density.h"

namespace homodyne::testing {

inline void ExpectGradientMatchesFiniteDifferences(const nuts::LogDensity& density,
                                                   const std::vector<double>& q, double rel) {
  std::vector<double> grad(q.size()), g(q.size());
  density.LogDensityGradient(q, grad);
  for (std::size_t i = 0; i < q.size(); ++i) {
    const double h = 1e-5;
    auto at = [&](double step) {
      std::vector<double> qs = q;
      qs[i] += step;
      return density.LogDensityGradient(qs, g);
    };
    const double fd = (8.0 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12.0 * h);
    EXPECT_NEAR(grad[i], fd, rel * (1.0 + std::abs(fd))) << "coordinate " << i;
  }
}

}  // namespace homodyne::testing
