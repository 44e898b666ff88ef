#include "model/reference_accumulate.h"

#include <algorithm>
#include <cmath>

#include "model/expanded_parameters.h"
#include "model/reference_gradient.h"
#include "model/reference_model.h"

namespace homodyne::model::reference {
namespace {

ModelEvaluation EvaluateExpanded(AnalysisMode mode, const Geometry& geometry,
                                 const std::vector<double>& t, const std::vector<double>& phi_deg,
                                 std::span<const double> params) {
  const ExpandedIndex idx(mode, static_cast<int>(phi_deg.size()));
  ModelInput in;
  in.mode = mode;
  in.geometry = geometry;
  in.t = t;
  in.phi_deg = phi_deg;
  in.contrast.assign(params.begin(), params.begin() + idx.n_angles);
  in.offset.assign(params.begin() + idx.n_angles, params.begin() + 2 * idx.n_angles);
  in.physical.assign(params.begin() + idx.phys(0), params.end());
  return Evaluate(in);
}

}  // namespace

std::vector<double> ModelAtTiles(AnalysisMode mode, const Geometry& geometry,
                                 const std::vector<double>& t, const std::vector<double>& phi_deg,
                                 std::span<const RowTile> tiles, std::span<const double> params) {
  const auto ev = EvaluateExpanded(mode, geometry, t, phi_deg, params);
  std::vector<double> out;
  for (const RowTile& tile : tiles) {
    for (int c = 0; c < tile.count; ++c)
      out.push_back(ev.C2(tile.angle, tile.row, tile.col_begin + c));
  }
  return out;
}

NormalEquations AccumulateNormalEquations(AnalysisMode mode, const Geometry& geometry,
                                          const std::vector<double>& t,
                                          const std::vector<double>& phi_deg,
                                          std::span<const RowTile> tiles,
                                          std::span<const double> params, double sigma,
                                          const RobustLoss& loss) {
  const auto ev = EvaluateExpanded(mode, geometry, t, phi_deg, params);
  const ReferenceGradient grad_model(mode, geometry, t, phi_deg, params);
  const int p_count = grad_model.index().size();
  NormalEquations ne(p_count);
  std::vector<double> grad(static_cast<size_t>(p_count));
  for (const RowTile& tile : tiles) {
    for (int c = 0; c < tile.count; ++c) {
      const int j = tile.col_begin + c;
      const double c2 = ev.C2(tile.angle, tile.row, j);
      grad_model.C2(tile.angle, tile.row, j, grad);
      const double w = tile.weight ? tile.weight[c] : tile.uniform_weight;
      const double r = (tile.data[c] - c2) / sigma;
      // SciPy's scaling of the row: J̃ = s·J, r̃ = (ρ′/s)·r, s² = max(ρ′ + 2zρ″, ε).
      double s = 1.0, rs = r;
      if (loss.robust()) {
        const double u = r / loss.f_scale;
        const LossTerms lt = EvaluateLoss(loss.kind, u * u);
        ne.chi2 += w * (loss.f_scale * loss.f_scale) * lt.rho;
        s = std::sqrt(lt.curvature > kLossCurvatureFloor ? lt.curvature : kLossCurvatureFloor);
        rs = lt.d1 / s * r;
      } else {
        ne.chi2 += w * r * r;
      }
      for (int a = 0; a < p_count; ++a) {
        const double ja = -grad[static_cast<size_t>(a)] / sigma * s;
        ne.jtr[static_cast<size_t>(a)] += w * ja * rs;
        for (int b = 0; b < p_count; ++b) {
          ne.JtJ(a, b) += w * ja * (-grad[static_cast<size_t>(b)] / sigma * s);
        }
      }
    }
  }
  return ne;
}

}  // namespace homodyne::model::reference
