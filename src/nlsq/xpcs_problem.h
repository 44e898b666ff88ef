// The XPCS fit as a lsq::LeastSquaresProblem: one rank's share of the two-time data, the
// model kernel, and the per-angle scaling layout.
//
// The rank's points come in partition blocks (parallel/partition.h). Each block has its
// own kernel; a data pass evaluates the blocks on the rank's threads and combines their
// sums along the global block tree (ReproducibleTileSum), so χ², Jᵀr and JᵀJ are the
// same bits on every rank and for every rank and thread count. The solver works in
// the layout's optimiser space: JᵀJ_opt = Bᵀ(JᵀJ)B, Jᵀr_opt = BᵀJᵀr.
//
// Streaming (setup.stream set, setup.blocks empty): the rank's blocks come window by
// window from a BlockStream on every pass; each window gets a kernel whose chunks are its
// blocks, so every block's partial — and hence the tree sum — has the same bits as in
// the in-core problem.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lsq/least_squares_problem.h"
#include "model/analysis_mode.h"
#include "model/geometry.h"
#include "model/normal_equations.h"
#include "model/parameter_layout.h"
#include "model/robust_loss.h"
#include "model/row_tile.h"
#include "nlsq/pass_ledger.h"
#include "nlsq/scaling_penalty.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

class BlockStream;

struct XpcsProblemSetup {
  model::AnalysisMode mode = model::AnalysisMode::kStatic;
  model::Geometry geometry;
  std::vector<double> t;        // fit time grid (t = 0 excluded)
  std::vector<double> phi_deg;  // kept angles
  // This rank's blocks (global indices first_block, first_block + 1, ...), each a list of
  // row tiles into `t` whose data pointers stay valid for the problem's lifetime.
  std::vector<std::vector<model::RowTile>> blocks;
  std::int64_t first_block = 0;
  std::int64_t total_blocks = 0;
  // Streaming instead of `blocks`: the rank's blocks, read window by window on every pass
  // (the stream must outlive the problem).
  BlockStream* stream = nullptr;
  // Memory the blocks' data and weights point into, kept alive with the problem (a streamed
  // problem's rows copied by OnRows); empty: the caller's.
  std::shared_ptr<const void> storage;
  double sigma = 0.01;
  // The loss of every pass (model/robust_loss.h): a robust loss makes χ² the robust
  // objective C²·Σ w·ρ(z) and the normal equations its Gauss–Newton form (PlainChi2 gives
  // the plain χ²).
  model::RobustLoss loss;
  int threads = 1;
  // Optional, run once in each of the kernel's spawned worker threads (1..threads−1) before
  // any work: the driver pins them to their cores here (homodyne::PinCurrentThread).
  std::function<void(int thread_index)> worker_start;
  // Where the passes are counted (shared with the session and the row problems); empty: the
  // problem's own.
  std::shared_ptr<PassLedger> ledger;
};

class XpcsProblem : public lsq::LeastSquaresProblem {
 public:
  XpcsProblem(const Comm& comm, XpcsProblemSetup setup, model::ParameterLayout layout);
  ~XpcsProblem() override;

  int num_parameters() const override;
  void Evaluate(std::span<const double> x, bool with_derivatives,
                lsq::NormalEquations& out) override;
  // One pass over the rank's blocks (streaming: each window read once) evaluating every
  // point, and one reproducible reduction of the batch's χ² column vector.
  void EvaluateChi2Batch(std::span<const std::vector<double>> xs,
                         std::vector<double>& chi2) override;
  double ZeroModelChi2(std::span<const double> x) override;  // contrast = offset = 0
  // Asked before every block of a pass (in core: by the kernel's threads; streaming: also
  // before each window is read).
  void SetStopCheck(std::function<bool()> stop) override;

  // Collective: χ² split by angle at the optimiser point x, one entry per angle (the terms
  // w·r² of Evaluate's χ², model values from the kernel's own model evaluation, summed per
  // block and angle and reduced along the block tree: the same bits for any rank count;
  // their sum equals Evaluate's χ² to rounding). One extra model pass over the data, in
  // pieces of at most kChi2PerAnglePiecePoints points at a time.
  std::vector<double> Chi2PerAngle(std::span<const double> x);
  static constexpr std::int64_t kChi2PerAnglePiecePoints = std::int64_t{1} << 21;
  // Collective: PlainChi2(x) and Chi2PerAngle(x), the same bits as each alone. Streamed, one
  // read of the data serves both (a fused pass); in core, the two passes.
  struct PlainAndPerAngle {
    double plain_chi2 = 0.0;
    std::vector<double> per_angle;
  };
  PlainAndPerAngle PlainChi2AndPerAngle(std::span<const double> x);

  // Reduced normal equations of the data in the expanded (individual per-angle) space (no
  // penalty rows).
  model::NormalEquations EvaluateExpanded(std::span<const double> expanded, bool with_derivatives);
  // Collective: χ² of the data at `expanded` with every contrast and offset set to zero
  // (the model vanishes; ZeroModelChi2 of any layout).
  double ZeroScalingChi2(std::vector<double> expanded);

  // From now on Evaluate and EvaluateChi2Batch add these rows to every χ², Jᵀr and JᵀJ
  // (after the reduction: every rank adds the same values). Local, not collective: every
  // rank must set the same penalty. Inactive (the default): the data alone.
  void SetScalingPenalty(const ScalingSpreadPenalty& penalty) { penalty_ = penalty; }
  const ScalingSpreadPenalty& scaling_penalty() const { return penalty_; }
  // Collective: χ² of the data alone at optimiser point x (the penalty rows left out): the
  // objective of the data under the problem's loss.
  double DataChi2(std::span<const double> x);
  // Collective: the plain χ² = Σ w·r² of the data at x whatever the loss (under the linear
  // loss DataChi2's bits; else one pass with the linear loss).
  double PlainChi2(std::span<const double> x);
  // The loss of every pass from now on. Local, not collective: every rank must set the same.
  void SetLoss(const model::RobustLoss& loss);
  const model::RobustLoss& loss() const;

  // Every point of angle k counts with weight weights[k] in χ², Jᵀr and JᵀJ from now on
  // (one weight per angle; empty: unweighted again). Local, not collective: every rank
  // must set the same weights before the next pass.
  void SetAngleWeights(std::span<const double> weights);

  // Collective: the same problem on the points of every `stride`-th row (rows 0, stride,
  // 2·stride, … of the fit grid, each with all its columns), unweighted. Its blocks are this
  // problem's with the other rows' tiles left out (a block may be left empty and adds zero),
  // so it reduces along the same tree and its values do not depend on the ranks either. A
  // streamed problem reads every window once and keeps copies of those rows (counted as a
  // data pass): the row problem is in core and gives the in-core one's bits.
  std::unique_ptr<XpcsProblem> OnRows(int stride) const;

  const model::ParameterLayout& layout() const { return layout_; }
  std::int64_t total_points() const { return total_points_; }  // unique pairs, all ranks
  std::int64_t local_points() const;
  int passes() const { return passes_; }
  PassLedger& ledger() { return *ledger_; }
  void StepAccepted() override { ledger_->StepAccepted(); }

 private:
  struct Impl;
  class AngleSums;
  std::unique_ptr<Impl> impl_;
  const Comm& comm_;
  model::ParameterLayout layout_;
  std::int64_t total_points_ = 0;
  int passes_ = 0;
  // Every pass of the problem is also counted here, by stage and kind; a row problem's as
  // PassKind::kRows (OnRows).
  std::shared_ptr<PassLedger> ledger_;
  bool on_rows_ = false;
  void CountPass(PassKind kind);
  ScalingSpreadPenalty penalty_;
};

}  // namespace homodyne::nlsq
