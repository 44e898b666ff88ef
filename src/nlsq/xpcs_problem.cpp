#include "homodyne/nlsq/xpcs_problem.h"

#include <algorithm>
#include <limits>

#include "homodyne/error.h"
#include "homodyne/model/kernel.h"
#include "homodyne/model/thread_pool.h"
#include "homodyne/parallel/tile_sum.h"

namespace homodyne::nlsq {

struct XpcsProblem::Impl {
  std::vector<std::unique_ptr<model::ModelKernel>> kernels;  // one per local block
  std::unique_ptr<model::ThreadPool> pool;
  std::int64_t first_block = 0;
  std::int64_t total_blocks = 0;
  int n_expanded = 0;
  std::int64_t local_points = 0;
  std::vector<std::vector<double>> partials;  // per local block, flattened sums
};

XpcsProblem::XpcsProblem(const Comm& comm, XpcsProblemSetup setup, model::ParameterLayout layout)
    : impl_(std::make_unique<Impl>()), comm_(comm), layout_(std::move(layout)) {
  HOMODYNE_CHECK(setup.threads >= 1, "need at least one thread");
  HOMODYNE_CHECK(
      setup.first_block >= 0 &&
          setup.first_block + static_cast<std::int64_t>(setup.blocks.size()) <= setup.total_blocks,
      "block range outside the plan");
  impl_->first_block = setup.first_block;
  impl_->total_blocks = setup.total_blocks;
  impl_->n_expanded = layout_.num_expanded();
  model::KernelOptions ko;
  ko.threads = 1;  // parallelism is over blocks (below)
  ko.sigma = setup.sigma;
  ko.chunk_points = std::numeric_limits<std::int64_t>::max();  // one chunk per block
  for (auto& tiles : setup.blocks) {
    auto kernel = std::make_unique<model::ModelKernel>(setup.mode, setup.geometry, setup.t,
                                                       setup.phi_deg, std::move(tiles), ko);
    impl_->local_points += kernel->num_points();
    impl_->kernels.push_back(std::move(kernel));
  }
  impl_->partials.resize(impl_->kernels.size());
  impl_->pool = std::make_unique<model::ThreadPool>(setup.threads);
  MPI_Allreduce(&impl_->local_points, &total_points_, 1, MPI_INT64_T, MPI_SUM, comm_.get());
}

XpcsProblem::~XpcsProblem() = default;

int XpcsProblem::num_parameters() const { return layout_.num_optimised(); }

std::int64_t XpcsProblem::local_points() const { return impl_->local_points; }

model::NormalEquations XpcsProblem::EvaluateExpanded(std::span<const double> expanded,
                                                     bool with_derivatives) {
  ++passes_;
  const int p = impl_->n_expanded;
  const auto pp = static_cast<std::size_t>(p);
  const std::size_t width = with_derivatives ? 1 + pp + pp * pp : 1;
  // Each block's sums on the pool (per-block outputs: the order of completion is free).
  impl_->pool->ParallelFor(static_cast<int>(impl_->kernels.size()), [&](int b) {
    auto& out = impl_->partials[static_cast<std::size_t>(b)];
    out.assign(width, 0.0);
    const auto& kernel = *impl_->kernels[static_cast<std::size_t>(b)];
    if (!with_derivatives) {
      out[0] = kernel.Chi2(expanded);
      return;
    }
    const model::NormalEquations eq = kernel.Accumulate(expanded);
    out[0] = eq.chi2;
    std::copy(eq.jtr.begin(), eq.jtr.end(), out.begin() + 1);
    std::copy(eq.jtj.begin(), eq.jtj.end(), out.begin() + 1 + p);
  });
  // Combine along the global block tree: identical bits for any rank/thread count.
  const std::int64_t b0 = impl_->first_block;
  const auto sum = ReproducibleTileSum(
      comm_, impl_->total_blocks, b0, b0 + static_cast<std::int64_t>(impl_->kernels.size()), width,
      [&](std::int64_t block, std::span<double> out) {
        const auto& part = impl_->partials[static_cast<std::size_t>(block - b0)];
        std::copy(part.begin(), part.end(), out.begin());
      });
  model::NormalEquations eq(with_derivatives ? p : 0);
  eq.chi2 = sum[0];
  if (with_derivatives) {
    std::copy(sum.begin() + 1, sum.begin() + 1 + p, eq.jtr.begin());
    std::copy(sum.begin() + 1 + p, sum.end(), eq.jtj.begin());
  }
  return eq;
}

void XpcsProblem::Evaluate(std::span<const double> x, bool with_derivatives, NormalEquations& out) {
  const std::vector<double> expanded = layout_.Expand(x);
  const model::NormalEquations e = EvaluateExpanded(expanded, with_derivatives);
  out.chi2 = e.chi2;
  out.n_points = total_points_;
  if (!with_derivatives) return;
  const model::NormalEquations o = layout_.ToOptimiser(e);
  out.gradient = o.jtr;
  out.hessian = o.jtj;
}

}  // namespace homodyne::nlsq
