#include "nlsq/xpcs_problem.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <thread>

#include "core/errors.h"
#include "core/fault_injection.h"
#include "model/expanded_parameters.h"
#include "model/kernel_factory.h"
#include "nlsq/block_stream.h"
#include "parallel/collective.h"
#include "parallel/tile_sum.h"

namespace homodyne::nlsq {
namespace {

// `blocks` as one kernel's tiles, each block one chunk: the index of its first tile is
// appended to `chunk_starts` (KernelOptions::chunk_tile_starts).
std::vector<model::RowTile> ChunkedTiles(std::span<const std::vector<model::RowTile>> blocks,
                                         std::vector<int>& chunk_starts) {
  std::vector<model::RowTile> tiles;
  for (const auto& block : blocks) {
    chunk_starts.push_back(static_cast<int>(tiles.size()));
    tiles.insert(tiles.end(), block.begin(), block.end());
  }
  return tiles;
}

}  // namespace

struct XpcsProblem::Impl {
  // In-core: all local blocks, one chunk per block. Streaming: no tiles (layout only).
  std::unique_ptr<model::PassKernel> kernel;
  BlockStream* stream = nullptr;
  model::AnalysisMode mode = model::AnalysisMode::kStatic;
  model::Geometry geometry;
  std::vector<double> t, phi;
  model::KernelOptions window_options;  // streaming: per-window kernels; in core: the kernel's
  std::vector<model::RowTile> tiles;    // in core: the kernel's tiles, unweighted
  std::vector<double> angle_weights;    // empty: unweighted (SetAngleWeights)
  std::int64_t first_block = 0;
  std::int64_t total_blocks = 0;
  int local_blocks = 0;
  std::int64_t local_points = 0;
  // Block-major: block b's partial of parameter vector j at (b·m + j)·width, m vectors.
  std::vector<double> partials;
  std::vector<double> scratch;        // one kernel's chunk partials (batches)
  std::function<bool()> stop;         // SetStopCheck
  std::function<bool()> block_check;  // this pass's: the stop check and the test delay

  // The partials of `k`'s chunks (local blocks block_offset…) for every vector of `expanded`.
  // False when the stop check cut the pass short.
  bool KernelPartials(const model::PassKernel& k, std::size_t block_offset,
                      std::span<const std::vector<double>> expanded, bool with_derivatives,
                      std::size_t width);
  // All local blocks' partials, in core or window by window from the stream (each window
  // read once for the whole batch). False when the stop check cut the pass short.
  // `also`, when set, is called with every streamed window after its partials (more work on
  // the same read).
  bool LocalPartials(std::span<const std::vector<double>> expanded, bool with_derivatives,
                     std::size_t width, int rank,
                     const std::function<void(const StreamWindow&)>* also = nullptr);
  // One pass's local work as a unit of the fault tests (the "fit" stage and the solver
  // stage now running), agreed on, then — with a stop check — the agreement on a stop:
  // lsq::PassInterrupted on every rank if any rank's pass was cut short.
  void AgreedLocalPartials(const Comm& comm, std::span<const std::vector<double>> expanded,
                           bool with_derivatives, std::size_t width,
                           const std::function<void(const StreamWindow&)>* also = nullptr);
  // `in` with every point of angle k weighted by angle_weights[k]: uniform weights scaled,
  // per-point weight arrays copied scaled into `storage` (which must outlive the tiles).
  std::vector<model::RowTile> Weighted(std::vector<model::RowTile> in,
                                       std::vector<std::vector<double>>& storage) const;
  // In core: the local blocks' tiles, by block, keeping the rows 0, stride, 2·stride, …
  // (a block may be left empty).
  std::vector<std::vector<model::RowTile>> BlocksOnRows(int stride) const;
  // Streaming: the same blocks from every window read once, each kept row's values (and
  // weights) copied into `storage`.
  std::vector<std::vector<model::RowTile>> StreamedBlocksOnRows(
      int stride, std::deque<std::vector<double>>& storage) const;
  std::shared_ptr<const void> owned;                // XpcsProblemSetup::storage
  std::vector<std::vector<double>> window_weights;  // storage for a window's weighted tiles
  std::vector<std::vector<double>> incore_weights;  // storage for the in-core kernel's
};

std::vector<model::RowTile> XpcsProblem::Impl::Weighted(
    std::vector<model::RowTile> in, std::vector<std::vector<double>>& storage) const {
  storage.clear();
  if (angle_weights.empty()) return in;
  for (model::RowTile& tile : in) {
    const double w = angle_weights[static_cast<std::size_t>(tile.angle)];
    tile.uniform_weight *= w;
    if (tile.weight != nullptr) {
      std::vector<double>& copy = storage.emplace_back(tile.weight, tile.weight + tile.count);
      for (double& v : copy) v *= w;
      tile.weight = copy.data();
    }
  }
  return in;
}

std::vector<std::vector<model::RowTile>> XpcsProblem::Impl::BlocksOnRows(int stride) const {
  const std::vector<int>& starts = window_options.chunk_tile_starts;
  std::vector<std::vector<model::RowTile>> blocks;
  for (std::size_t b = 0; b < starts.size(); ++b) {
    const auto end = b + 1 < starts.size() ? static_cast<std::size_t>(starts[b + 1]) : tiles.size();
    std::vector<model::RowTile>& block = blocks.emplace_back();
    for (std::size_t i = static_cast<std::size_t>(starts[b]); i < end; ++i) {
      if (tiles[i].row % stride == 0) block.push_back(tiles[i]);
    }
  }
  return blocks;
}

std::vector<std::vector<model::RowTile>> XpcsProblem::Impl::StreamedBlocksOnRows(
    int stride, std::deque<std::vector<double>>& storage) const {
  std::vector<std::vector<model::RowTile>> blocks(static_cast<std::size_t>(local_blocks));
  const BlockStream::PassTimer pass(*stream);
  for (int w = 0; w < stream->num_windows(); ++w) {
    const StreamWindow& win = stream->Load(w);
    for (std::size_t b = 0; b < win.blocks.size(); ++b) {
      for (model::RowTile tile : win.blocks[b]) {
        if (tile.row % stride != 0) continue;
        tile.data = storage.emplace_back(tile.data, tile.data + tile.count).data();
        if (tile.weight != nullptr) {
          tile.weight = storage.emplace_back(tile.weight, tile.weight + tile.count).data();
        }
        blocks[static_cast<std::size_t>(win.first_block) + b].push_back(tile);
      }
    }
  }
  return blocks;
}

bool XpcsProblem::Impl::KernelPartials(const model::PassKernel& k, std::size_t block_offset,
                                       std::span<const std::vector<double>> expanded,
                                       bool with_derivatives, std::size_t width) {
  const std::size_t m = expanded.size();
  const auto n_chunks = static_cast<std::size_t>(k.num_chunks());
  if (m == 1) {
    return k.ChunkPartials(
        expanded[0], with_derivatives,
        std::span<double>(partials.data() + block_offset * width, n_chunks * width), block_check);
  }
  scratch.resize(n_chunks * width);
  for (std::size_t j = 0; j < m; ++j) {
    if (!k.ChunkPartials(expanded[j], with_derivatives, scratch, block_check)) return false;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      std::copy_n(
          scratch.begin() + static_cast<std::ptrdiff_t>(c * width), width,
          partials.begin() + static_cast<std::ptrdiff_t>(((block_offset + c) * m + j) * width));
    }
  }
  return true;
}

bool XpcsProblem::Impl::LocalPartials(std::span<const std::vector<double>> expanded,
                                      bool with_derivatives, std::size_t width, int rank,
                                      const std::function<void(const StreamWindow&)>* also) {
  partials.resize(static_cast<std::size_t>(local_blocks) * expanded.size() * width);
  if (stream == nullptr) return KernelPartials(*kernel, 0, expanded, with_derivatives, width);
  const BlockStream::PassTimer pass(*stream);
  for (int w = 0; w < stream->num_windows(); ++w) {
    if (stop && stop()) return false;    // before the window's read, the long part
    MaybeInjectFailure("stream", rank);  // tests: a read failing on one rank mid-pass
    const StreamWindow& win = stream->Load(w);
    model::KernelOptions ko = window_options;
    std::vector<model::RowTile> window_tiles = ChunkedTiles(win.blocks, ko.chunk_tile_starts);
    const auto kp = model::MakePassKernel(mode, geometry, t, phi,
                                          Weighted(std::move(window_tiles), window_weights), ko);
    const model::PassKernel& k = *kp;
    HOMODYNE_CHECK(k.num_chunks() == static_cast<int>(win.blocks.size()), "one chunk per block");
    if (!KernelPartials(k, static_cast<std::size_t>(win.first_block), expanded, with_derivatives,
                        width)) {
      return false;
    }
    if (also != nullptr) (*also)(win);
  }
  return true;
}

void XpcsProblem::Impl::AgreedLocalPartials(const Comm& comm,
                                            std::span<const std::vector<double>> expanded,
                                            bool with_derivatives, std::size_t width,
                                            const std::function<void(const StreamWindow&)>* also) {
  int cut = 0;
  RunCollectively(comm, [&] {
    const FaultScope any_pass("fit");  // job rank: comm may be a multistart group
    const FaultScope this_stage(CurrentFaultStage());
    block_check = stop;
    if (const int delay_ms = BlockDelayMilliseconds(); delay_ms > 0) {
      block_check = [this, delay_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        return stop && stop();
      };
    }
    cut = LocalPartials(expanded, with_derivatives, width, comm.rank(), also) ? 0 : 1;
  });
  if (!stop) return;  // every rank has the same setting: no rank waits below alone
  MPI_Allreduce(MPI_IN_PLACE, &cut, 1, MPI_INT, MPI_MAX, comm.get());
  if (cut != 0) throw lsq::PassInterrupted();
}

void XpcsProblem::SetStopCheck(std::function<bool()> stop) { impl_->stop = std::move(stop); }

XpcsProblem::XpcsProblem(const Comm& comm, XpcsProblemSetup setup, model::ParameterLayout layout)
    : impl_(std::make_unique<Impl>()),
      comm_(comm),
      layout_(std::move(layout)),
      ledger_(setup.ledger ? setup.ledger : std::make_shared<PassLedger>()) {
  HOMODYNE_CHECK(setup.threads >= 1, "need at least one thread");
  HOMODYNE_CHECK(
      setup.first_block >= 0 &&
          setup.first_block + static_cast<std::int64_t>(setup.blocks.size()) <= setup.total_blocks,
      "block range outside the plan");
  impl_->first_block = setup.first_block;
  impl_->total_blocks = setup.total_blocks;
  impl_->owned = std::move(setup.storage);
  model::KernelOptions ko;
  ko.threads = setup.threads;
  ko.sigma = setup.sigma;
  ko.loss = setup.loss;
  ko.worker_start = setup.worker_start;
  impl_->mode = setup.mode;
  impl_->geometry = setup.geometry;
  impl_->t = setup.t;
  impl_->phi = setup.phi_deg;
  if (setup.stream != nullptr) {
    HOMODYNE_CHECK(setup.blocks.empty(), "a streaming problem takes its blocks from the stream");
    HOMODYNE_CHECK(setup.first_block + setup.stream->num_blocks() <= setup.total_blocks,
                   "block range outside the plan");
    Impl& im = *impl_;
    im.stream = setup.stream;
    im.local_blocks = setup.stream->num_blocks();
    im.local_points = setup.stream->local_points();
    im.window_options = ko;
    model::KernelOptions layout_only;
    layout_only.sigma = setup.sigma;
    im.kernel = model::MakePassKernel(setup.mode, setup.geometry, setup.t, setup.phi_deg,
                                      std::vector<model::RowTile>{}, layout_only);
  } else {
    impl_->local_blocks = static_cast<int>(setup.blocks.size());
    std::vector<model::RowTile> tiles = ChunkedTiles(setup.blocks, ko.chunk_tile_starts);
    impl_->tiles = tiles;
    impl_->window_options = ko;
    impl_->kernel = model::MakePassKernel(setup.mode, setup.geometry, setup.t, setup.phi_deg,
                                          std::move(tiles), ko);
    HOMODYNE_CHECK(impl_->kernel->num_chunks() == impl_->local_blocks, "one chunk per block");
    impl_->local_points = impl_->kernel->num_points();
  }
  MPI_Allreduce(&impl_->local_points, &total_points_, 1, MPI_INT64_T, MPI_SUM, comm_.get());
}

XpcsProblem::~XpcsProblem() = default;

void XpcsProblem::SetAngleWeights(std::span<const double> weights) {
  Impl& im = *impl_;
  HOMODYNE_CHECK(weights.empty() || weights.size() == im.phi.size(), "one weight per angle");
  // The in-core kernel is rebuilt for new weights (tables, thread pool): not for the same.
  if (std::equal(weights.begin(), weights.end(), im.angle_weights.begin(),
                 im.angle_weights.end())) {
    return;
  }
  im.angle_weights.assign(weights.begin(), weights.end());
  if (im.stream != nullptr) return;  // each window's kernel is built with them
  im.kernel = model::MakePassKernel(im.mode, im.geometry, im.t, im.phi,
                                    im.Weighted(im.tiles, im.incore_weights), im.window_options);
}

std::unique_ptr<XpcsProblem> XpcsProblem::OnRows(int stride) const {
  const Impl& im = *impl_;
  HOMODYNE_CHECK(stride >= 1, "row stride must be at least 1");
  XpcsProblemSetup setup;
  setup.mode = im.mode;
  setup.geometry = im.geometry;
  setup.t = im.t;
  setup.phi_deg = im.phi;
  setup.first_block = im.first_block;
  setup.total_blocks = im.total_blocks;
  setup.sigma = im.window_options.sigma;
  setup.loss = im.window_options.loss;
  setup.threads = im.window_options.threads;
  setup.worker_start = im.window_options.worker_start;
  if (im.stream == nullptr) {
    setup.blocks = im.BlocksOnRows(stride);
  } else {
    // One read of the data, agreed on as a pass is (a read failing on one rank).
    auto storage = std::make_shared<std::deque<std::vector<double>>>();
    RunCollectively(comm_, [&] {
      const FaultScope any_pass("fit");
      setup.blocks = im.StreamedBlocksOnRows(stride, *storage);
    });
    ledger_->Count(PassKind::kData);
    setup.storage = std::move(storage);
  }
  // The search on rows minimises the same objective: the same penalty rows.
  setup.ledger = ledger_;
  auto rows = std::make_unique<XpcsProblem>(comm_, std::move(setup), layout_);
  rows->on_rows_ = true;
  rows->SetScalingPenalty(penalty_);
  return rows;
}

void XpcsProblem::CountPass(PassKind kind) {
  ++passes_;
  ledger_->Count(on_rows_ ? PassKind::kRows : kind);
}

int XpcsProblem::num_parameters() const { return layout_.num_optimised(); }

std::int64_t XpcsProblem::local_points() const { return impl_->local_points; }

model::NormalEquations XpcsProblem::EvaluateExpanded(std::span<const double> expanded,
                                                     bool with_derivatives) {
  CountPass(with_derivatives ? PassKind::kNormal : PassKind::kChi2);
  const model::PassKernel& kernel = *impl_->kernel;
  const std::size_t width = kernel.partial_size(with_derivatives);
  // Per-block sums on this rank's threads (fixed order inside each block) ... A failure
  // here on one rank (a model error, a streamed read) is agreed on before the sum below,
  // so no rank waits in it forever.
  const std::vector<double> one(expanded.begin(), expanded.end());
  impl_->AgreedLocalPartials(comm_, std::span<const std::vector<double>>(&one, 1), with_derivatives,
                             width);
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

void XpcsProblem::EvaluateChi2Batch(std::span<const std::vector<double>> xs,
                                    std::vector<double>& chi2) {
  chi2.assign(xs.size(), 0.0);
  if (xs.empty()) return;
  CountPass(xs.size() == 1 ? PassKind::kChi2 : PassKind::kChi2Batch);
  std::vector<std::vector<double>> expanded;
  expanded.reserve(xs.size());
  for (const auto& x : xs) expanded.push_back(layout_.Expand(x));
  // Each vector's χ² partial of a block is what a single evaluation computes; the tree sum
  // adds the batch's columns element-wise in the same order, so every χ² has the bits of
  // Evaluate(x, false) — and one reduction serves the whole batch.
  const std::size_t m = xs.size();
  impl_->AgreedLocalPartials(comm_, expanded, false, 1);
  const std::int64_t b0 = impl_->first_block;
  chi2 = ReproducibleTileSum(
      comm_, impl_->total_blocks, b0, b0 + impl_->local_blocks, m,
      [&](std::int64_t block, std::span<double> out) {
        const auto offset = static_cast<std::size_t>(block - b0) * m;
        std::copy_n(impl_->partials.begin() + static_cast<std::ptrdiff_t>(offset), m, out.begin());
      });
  for (std::size_t i = 0; i < m; ++i) penalty_.AddChi2(expanded[i], chi2[i]);
}

void XpcsProblem::Evaluate(std::span<const double> x, bool with_derivatives,
                           lsq::NormalEquations& out) {
  const std::vector<double> expanded = layout_.Expand(x);
  model::NormalEquations e = EvaluateExpanded(expanded, with_derivatives);
  if (with_derivatives) {
    penalty_.AddTo(expanded, e);
  } else {
    penalty_.AddChi2(expanded, e.chi2);
  }
  out.chi2 = e.chi2;
  out.n_points = total_points_;
  if (!with_derivatives) return;
  const model::NormalEquations o = layout_.ToOptimiser(e);
  out.gradient = o.jtr;
  out.hessian = o.jtj;
}

namespace {

// Adds the χ² terms of `tiles` (model values `model`, tiles in order) to sums[block·n + angle],
// block_of[t] the local block of tile t.
void AddAngleTerms(std::span<const model::RowTile> tiles, std::span<const int> block_of,
                   std::span<const double> model, double inv_sigma, std::size_t n_angles,
                   std::vector<double>& sums) {
  std::size_t at = 0;
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const model::RowTile& tile = tiles[t];
    double acc = 0.0;
    for (int col = 0; col < tile.count; ++col) {
      const double w = tile.weight != nullptr ? tile.weight[col] : tile.uniform_weight;
      const double r = (tile.data[col] - model[at + static_cast<std::size_t>(col)]) * inv_sigma;
      acc += w != 0.0 ? w * r * r : 0.0;  // masked points count 0, whatever their data
    }
    at += static_cast<std::size_t>(tile.count);
    sums[static_cast<std::size_t>(block_of[t]) * n_angles + static_cast<std::size_t>(tile.angle)] +=
        acc;
  }
}

}  // namespace

// The per-angle χ² sums of the blocks a pass visits: AddBlocks for each run of blocks (in
// core all of them, streamed each window's), then Reduce along the block tree.
class XpcsProblem::AngleSums {
 public:
  AngleSums(const Impl& im, std::span<const double> x_expanded)
      : im_(im),
        expanded_(x_expanded),
        n_angles_(im.phi.size()),
        inv_sigma_(1.0 / im.window_options.sigma),
        sums_(static_cast<std::size_t>(im.local_blocks) * n_angles_, 0.0) {}

  // Blocks in pieces of about kChi2PerAnglePiecePoints points (at least one block each).
  void AddBlocks(const std::vector<std::vector<model::RowTile>>& blocks, int block0) {
    std::size_t first = 0;
    std::int64_t points = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      for (const model::RowTile& tile : blocks[b]) points += tile.count;
      if (points >= kChi2PerAnglePiecePoints || b + 1 == blocks.size()) {
        Piece(blocks, first, b + 1, block0);
        first = b + 1;
        points = 0;
      }
    }
  }

  std::vector<double> Reduce(const Comm& comm) const {
    const std::int64_t b0 = im_.first_block;
    return ReproducibleTileSum(
        comm, im_.total_blocks, b0, b0 + im_.local_blocks, n_angles_,
        [&](std::int64_t block, std::span<double> out) {
          const auto offset = static_cast<std::size_t>(block - b0) * n_angles_;
          std::copy_n(sums_.begin() + static_cast<std::ptrdiff_t>(offset), n_angles_, out.begin());
        });
  }

 private:
  // The blocks [first, last) of `blocks` (local indices from `block0`) through one kernel.
  void Piece(const std::vector<std::vector<model::RowTile>>& blocks, std::size_t first,
             std::size_t last, int block0) {
    model::KernelOptions ko = im_.window_options;
    ko.chunk_tile_starts.clear();
    std::vector<int> block_of;
    for (std::size_t b = first; b < last; ++b) {
      block_of.insert(block_of.end(), blocks[b].size(), block0 + static_cast<int>(b));
    }
    std::vector<std::vector<double>> storage;
    const std::vector<model::RowTile> tiles = im_.Weighted(
        ChunkedTiles(std::span(blocks).subspan(first, last - first), ko.chunk_tile_starts),
        storage);
    const auto kernel = model::MakePassKernel(im_.mode, im_.geometry, im_.t, im_.phi, tiles, ko);
    std::vector<double> values(static_cast<std::size_t>(kernel->num_points()));
    kernel->EvaluateModel(expanded_, values);
    AddAngleTerms(tiles, block_of, values, inv_sigma_, n_angles_, sums_);
  }

  const Impl& im_;
  std::span<const double> expanded_;
  std::size_t n_angles_;
  double inv_sigma_;
  std::vector<double> sums_;
};

std::vector<double> XpcsProblem::Chi2PerAngle(std::span<const double> x) {
  Impl& im = *impl_;
  CountPass(PassKind::kModel);
  const std::vector<double> expanded = layout_.Expand(x);
  AngleSums sums(im, expanded);
  RunCollectively(comm_, [&] {
    if (im.stream != nullptr) {
      const BlockStream::PassTimer pass(*im.stream);
      for (int w = 0; w < im.stream->num_windows(); ++w) {
        const StreamWindow& win = im.stream->Load(w);
        sums.AddBlocks(win.blocks, win.first_block);
      }
      return;
    }
    sums.AddBlocks(im.BlocksOnRows(1), 0);
  });
  return sums.Reduce(comm_);
}

XpcsProblem::PlainAndPerAngle XpcsProblem::PlainChi2AndPerAngle(std::span<const double> x) {
  Impl& im = *impl_;
  if (im.stream == nullptr) return {PlainChi2(x), Chi2PerAngle(x)};
  // Streamed: PlainChi2's pass (its kernels and partials, the linear loss, the penalty rows
  // left out), each window's model values for the per-angle sums taken from the same read.
  CountPass(PassKind::kFused);
  const model::RobustLoss loss = im.window_options.loss;
  const std::vector<double> expanded = layout_.Expand(x);
  AngleSums sums(im, expanded);
  const std::function<void(const StreamWindow&)> also = [&](const StreamWindow& win) {
    sums.AddBlocks(win.blocks, win.first_block);
  };
  SetLoss({});  // as PlainChi2: the window kernels are built with the linear loss
  try {
    im.AgreedLocalPartials(comm_, std::span<const std::vector<double>>(&expanded, 1), false, 1,
                           &also);
  } catch (...) {
    SetLoss(loss);
    throw;
  }
  SetLoss(loss);
  const std::int64_t b0 = im.first_block;
  const auto chi2 = ReproducibleTileSum(comm_, im.total_blocks, b0, b0 + im.local_blocks, 1,
                                        [&](std::int64_t block, std::span<double> out) {
                                          out[0] =
                                              im.partials[static_cast<std::size_t>(block - b0)];
                                        });
  return {chi2[0], sums.Reduce(comm_)};
}

double XpcsProblem::DataChi2(std::span<const double> x) {
  return EvaluateExpanded(layout_.Expand(x), false).chi2;
}

void XpcsProblem::SetLoss(const model::RobustLoss& loss) {
  loss.Validate();
  impl_->window_options.loss = loss;  // streaming: each window's kernel is built with it
  impl_->kernel->SetLoss(loss);
}

const model::RobustLoss& XpcsProblem::loss() const { return impl_->window_options.loss; }

double XpcsProblem::PlainChi2(std::span<const double> x) {
  const model::RobustLoss loss = impl_->window_options.loss;
  if (!loss.robust()) return DataChi2(x);
  SetLoss({});
  double chi2 = 0.0;
  try {
    chi2 = DataChi2(x);
  } catch (...) {
    SetLoss(loss);
    throw;
  }
  SetLoss(loss);
  return chi2;
}

double XpcsProblem::ZeroModelChi2(std::span<const double> x) {
  return ZeroScalingChi2(layout_.Expand(x));
}

double XpcsProblem::ZeroScalingChi2(std::vector<double> expanded) {
  // c2 = offset + contrast·g1²: with every contrast and offset zero the model vanishes.
  const model::ExpandedIndex index(impl_->mode, static_cast<int>(impl_->phi.size()));
  for (int k = 0; k < index.n_angles; ++k) {
    expanded[static_cast<std::size_t>(index.contrast(k))] = 0.0;
    expanded[static_cast<std::size_t>(index.offset(k))] = 0.0;
  }
  return EvaluateExpanded(expanded, false).chi2;
}

}  // namespace homodyne::nlsq
