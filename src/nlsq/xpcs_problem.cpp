#include "homodyne/nlsq/xpcs_problem.h"

#include <algorithm>
#include <limits>

#include "homodyne/error.h"
#include "homodyne/fault_injection.h"
#include "homodyne/model/kernel.h"
#include "homodyne/parallel/collective.h"
#include "homodyne/parallel/tile_sum.h"

namespace homodyne::nlsq {

struct XpcsProblem::Impl {
  std::unique_ptr<model::ModelKernel> kernel;  // all local blocks, one chunk per block
  std::int64_t first_block = 0;
  std::int64_t total_blocks = 0;
  int local_blocks = 0;
  std::int64_t local_points = 0;
  std::vector<double> partials;  // local_blocks × compact partial size
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
  impl_->local_blocks = static_cast<int>(setup.blocks.size());
  model::KernelOptions ko;
  ko.threads = setup.threads;
  ko.sigma = setup.sigma;
  ko.worker_start = setup.worker_start;
  std::vector<model::RowTile> tiles;
  for (auto& block : setup.blocks) {
    ko.chunk_tile_starts.push_back(static_cast<int>(tiles.size()));
    tiles.insert(tiles.end(), block.begin(), block.end());
  }
  impl_->kernel = std::make_unique<model::ModelKernel>(setup.mode, setup.geometry, setup.t,
                                                       setup.phi_deg, std::move(tiles), ko);
  HOMODYNE_CHECK(impl_->kernel->num_chunks() == impl_->local_blocks, "one chunk per block");
  impl_->local_points = impl_->kernel->num_points();
  MPI_Allreduce(&impl_->local_points, &total_points_, 1, MPI_INT64_T, MPI_SUM, comm_.get());
}

XpcsProblem::~XpcsProblem() = default;

int XpcsProblem::num_parameters() const { return layout_.num_optimised(); }

std::int64_t XpcsProblem::local_points() const { return impl_->local_points; }

model::NormalEquations XpcsProblem::EvaluateExpanded(std::span<const double> expanded,
                                                     bool with_derivatives) {
  ++passes_;
  const model::ModelKernel& kernel = *impl_->kernel;
  const std::size_t width = kernel.partial_size(with_derivatives);
  impl_->partials.resize(static_cast<std::size_t>(impl_->local_blocks) * width);
  // Per-block sums on this rank's threads (fixed order inside each block) ... A failure
  // here on one rank is agreed on before the sum below, so no rank waits in it forever.
  RunCollectively(comm_, [&] {
    MaybeInjectFailure("fit");  // job rank: comm_ may be a group
    kernel.ChunkPartials(expanded, with_derivatives, impl_->partials);
  });
  // ... combined along the global block tree: identical bits for any rank/thread count.
  const std::int64_t b0 = impl_->first_block;
  const auto sum = ReproducibleTileSum(
      comm_, impl_->total_blocks, b0, b0 + impl_->local_blocks, width,
      [&](std::int64_t block, std::span<double> out) {
        const auto offset = static_cast<std::size_t>(block - b0) * width;
        std::copy(impl_->partials.begin() + static_cast<std::ptrdiff_t>(offset),
                  impl_->partials.begin() + static_cast<std::ptrdiff_t>(offset + width),
                  out.begin());
      });
  if (!with_derivatives) {
    model::NormalEquations eq;
    eq.chi2 = sum[0];
    return eq;
  }
  return kernel.FromPartial(sum);
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
