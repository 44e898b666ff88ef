#include "column_terms.h"

#include <cmath>

#include "core/simd_clones.h"
#include "model/constants.h"

namespace homodyne::model::detail {
namespace {

template <bool kLaminar, bool kDerivs>
__attribute__((always_inline)) inline void Columns(const ColumnInputs& in,
                                                   const ColumnValues& out) {
  // Restrict-qualified copies: the outputs are distinct scratch arrays.
  const double* __restrict cd = in.cd;
  const double* __restrict cg = in.cg;
  double* __restrict log_g1 = out.log_g1;
  double* __restrict delta_d = out.delta_d;
  double* __restrict id_d = out.id_d;
  double* __restrict shift_d = out.shift_d;
  double* __restrict ig_out = out.ig;
  double* __restrict cgsum = out.cgsum;
  double* __restrict shift = out.shift;
  double* __restrict inv_ig = out.inv_ig;
  const double wq = in.wq, cd_i = in.cd_i, cg_i = in.cg_i;
  const int n = in.n;
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#else
#pragma GCC ivdep
#endif
  for (int c = 0; c < n; ++c) {
    const double delta = cd_i - cd[c];
    const double id = SmoothAbs(delta);
    log_g1[c] = -wq * id;
    delta_d[c] = delta;
    id_d[c] = id;
    shift_d[c] = kSmoothAbsEps2 / (id + std::abs(delta));
    if constexpr (kLaminar) {
      const double dg = cg_i - cg[c];
      const double ig = SmoothAbs(dg);
      ig_out[c] = ig;
      cgsum[c] = cg_i + cg[c];
      shift[c] = kSmoothAbsEps2 / (ig + std::abs(dg));
      inv_ig[c] = 1.0 / ig;
    }
  }
  if constexpr (kDerivs) {
    for (int q = 0; q < 3; ++q) {
      const double* __restrict dcd = in.dcd[q];
      double* __restrict e = out.e[q];
      const double di = in.dcd_i[q];
      for (int c = 0; c < n; ++c) e[c] = di - dcd[c];
    }
    if constexpr (kLaminar) {
      for (int q = 0; q < 3; ++q) {
        const double* __restrict dcg = in.dcg[q];
        double* __restrict f = out.f[q];
        const double di = in.dcg_i[q];
        for (int c = 0; c < n; ++c) {
          const double dg = cg_i - cg[c];
          f[c] = (dg / ig_out[c]) * (di - dcg[c]);
        }
      }
    }
  }
}

}  // namespace

HOMODYNE_SIMD_CLONES void StaticColumns(const ColumnInputs& in, const ColumnValues& out,
                                        bool derivs) {
  derivs ? Columns<false, true>(in, out) : Columns<false, false>(in, out);
}

HOMODYNE_SIMD_CLONES void LaminarColumns(const ColumnInputs& in, const ColumnValues& out,
                                         bool derivs) {
  derivs ? Columns<true, true>(in, out) : Columns<true, false>(in, out);
}

}  // namespace homodyne::model::detail
