// What a data pass needs from a model over measured points, whichever the model: the
// homodyne kernel (kernel.h) and the two-component kernel (heterodyne_kernel.h) both
// provide it, and the fit and the sampler hold one through this interface
// (MakePassKernel, kernel_factory.h). One virtual call per pass, none per point.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "model/expanded_parameters.h"
#include "model/normal_equations.h"
#include "model/robust_loss.h"

namespace homodyne::model {

class PassKernel {
 public:
  virtual ~PassKernel() = default;

  // Parameter space: the expanded vector [contrast_k…, offset_k…, physical…].
  virtual const ExpandedIndex& index() const = 0;
  virtual std::int64_t num_points() const = 0;

  // χ² = Σ w·r²; the normal equations; χ² and JᵀWr (index().size() entries) with the bits
  // of the normal equations' pass.
  virtual double Chi2(std::span<const double> params) const = 0;
  virtual NormalEquations Accumulate(std::span<const double> params) const = 0;
  virtual double Gradient(std::span<const double> params, std::span<double> jtr) const = 0;

  // Per-chunk compact partials (partial_size doubles per chunk, chunks in order), added
  // element-wise and turned into the normal equations (or χ², element 0) by FromPartial.
  // `stop` is asked before each chunk; false: the pass was cut short (discard `out`).
  virtual int num_chunks() const = 0;
  virtual std::size_t partial_size(bool with_derivatives) const = 0;
  virtual bool ChunkPartials(std::span<const double> params, bool with_derivatives,
                             std::span<double> out,
                             const std::function<bool()>& stop = {}) const = 0;
  virtual NormalEquations FromPartial(std::span<const double> partial) const = 0;

  // The loss of the passes from now on (KernelOptions::loss); not while a pass runs.
  virtual void SetLoss(const RobustLoss& loss) = 0;
  virtual const RobustLoss& loss() const = 0;
  // Model c2 at every tile point, tiles in order.
  virtual void EvaluateModel(std::span<const double> params, std::span<double> out) const = 0;
};

}  // namespace homodyne::model
