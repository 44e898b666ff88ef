#include "model/compact_partial.h"

#include "core/errors.h"

namespace homodyne::model {

std::size_t CompactNormalSize(const ExpandedIndex& index) {
  const auto np = static_cast<std::size_t>(index.n_phys);
  return 1 + np * np + np + static_cast<std::size_t>(index.n_angles) * (5 + 2 * np);
}

std::size_t CompactGradientSize(const ExpandedIndex& index) {
  return 1 + static_cast<std::size_t>(index.n_phys) + 2 * static_cast<std::size_t>(index.n_angles);
}

NormalEquations NormalEquationsFromCompact(const ExpandedIndex& idx,
                                           std::span<const double> total) {
  HOMODYNE_CHECK(total.size() == CompactNormalSize(idx), "partial of the wrong size");
  const int np = idx.n_phys;
  NormalEquations ne(idx.size());
  ne.chi2 = total[0];
  const double* phys_jtj = total.data() + 1;
  const double* phys_jtr = phys_jtj + np * np;
  const double* angles = phys_jtr + np;
  auto set = [&](int a, int b, double v) {
    ne.JtJ(a, b) = v;
    ne.JtJ(b, a) = v;
  };
  // J = −u: JᵀWJ = Σ w·u·uᵀ, JᵀWr = −Σ w·u·r.
  for (int p = 0; p < np; ++p) {
    for (int q = p; q < np; ++q) set(idx.phys(p), idx.phys(q), phys_jtj[p * np + q]);
    ne.jtr[static_cast<std::size_t>(idx.phys(p))] = -phys_jtr[p];
  }
  for (int k = 0; k < idx.n_angles; ++k) {
    const double* ang = angles + static_cast<std::size_t>(k) * static_cast<std::size_t>(5 + 2 * np);
    set(idx.contrast(k), idx.contrast(k), ang[0]);
    set(idx.contrast(k), idx.offset(k), ang[1]);
    set(idx.offset(k), idx.offset(k), ang[2]);
    ne.jtr[static_cast<std::size_t>(idx.contrast(k))] = -ang[3];
    ne.jtr[static_cast<std::size_t>(idx.offset(k))] = -ang[4];
    for (int p = 0; p < np; ++p) {
      set(idx.contrast(k), idx.phys(p), ang[5 + p]);
      set(idx.offset(k), idx.phys(p), ang[5 + np + p]);
    }
  }
  return ne;
}

double GradientFromCompact(const ExpandedIndex& idx, std::span<const double> total,
                           std::span<double> jtr) {
  HOMODYNE_CHECK(static_cast<int>(jtr.size()) == idx.size(), "gradient of the wrong size");
  HOMODYNE_CHECK(total.size() == CompactGradientSize(idx), "partial of the wrong size");
  const int np = idx.n_phys;
  // J = −u: JᵀWr = −Σ w·u·r (the sign of NormalEquations::jtr).
  for (int p = 0; p < np; ++p) jtr[static_cast<std::size_t>(idx.phys(p))] = -total[1 + p];
  for (int k = 0; k < idx.n_angles; ++k) {
    const double* ang = total.data() + 1 + np + 2 * k;
    jtr[static_cast<std::size_t>(idx.contrast(k))] = -ang[0];
    jtr[static_cast<std::size_t>(idx.offset(k))] = -ang[1];
  }
  return total[0];
}

}  // namespace homodyne::model
