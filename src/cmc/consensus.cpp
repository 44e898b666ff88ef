#include "cmc/consensus.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace homodyne::cmc {
namespace {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::MatrixXd SampleCovariance(const Eigen::Map<const RowMatrix>& x) {
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const RowMatrix centred = x.rowwise() - mean;
  return (centred.transpose() * centred) / static_cast<double>(x.rows() - 1);
}

}  // namespace

ConsensusResult CombineConsensus(const std::vector<ShardDraws>& shards, ConsensusShape shape) {
  if (shards.empty()) ThrowBadInput("consensus needs at least one shard");
  const int d = shards.front().dims;
  int n = shards.front().count();
  for (std::size_t s = 0; s < shards.size(); ++s) {
    if (shards[s].dims != d || d < 1) {
      ThrowBadInput(fmt::format("shard {} has {} dimensions, expected {}", s, shards[s].dims, d));
    }
    if (shards[s].count() < d + 1) {
      ThrowBadInput(fmt::format("shard {} has {} draws; a covariance of {} dimensions needs ≥ {}",
                                s, shards[s].count(), d, d + 1));
    }
    n = std::min(n, shards[s].count());
  }
  ConsensusResult out;
  out.dims = d;
  std::vector<Eigen::MatrixXd> covs;
  std::vector<double> log_dets;
  double mean_log_det = 0.0;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const Eigen::Map<const RowMatrix> x(shards[s].draws.data(), shards[s].count(), d);
    covs.push_back(SampleCovariance(x));
    const Eigen::MatrixXd& cov = covs.back();
    out.shard_covariances.emplace_back(cov.data(), cov.data() + cov.size());
    const Eigen::LLT<Eigen::MatrixXd> llt(cov);
    if (llt.info() != Eigen::Success) {
      ThrowBadInput(
          fmt::format("shard {}: the draws' covariance is not positive definite "
                      "(a parameter did not move?)",
                      s));
    }
    log_dets.push_back(2.0 * llt.matrixLLT().diagonal().array().log().sum());
    mean_log_det += log_dets.back() / static_cast<double>(shards.size());
  }
  Eigen::MatrixXd w_sum = Eigen::MatrixXd::Zero(d, d);
  std::vector<Eigen::MatrixXd> weights;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    if (shape == ConsensusShape::kPerShard) {
      weights.push_back(
          Eigen::LLT<Eigen::MatrixXd>(covs[s]).solve(Eigen::MatrixXd::Identity(d, d)));
    } else {
      // W_s = κ_s Σ̄⁻¹; the common Σ̄⁻¹ cancels in (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j, so the weight
      // is the scalar κ_s (relative to the geometric mean of the shards' scales).
      const double kappa = std::exp(-(log_dets[s] - mean_log_det) / static_cast<double>(d));
      weights.push_back(kappa * Eigen::MatrixXd::Identity(d, d));
    }
    w_sum += weights.back();
  }
  const Eigen::LLT<Eigen::MatrixXd> total(w_sum);
  RowMatrix combined(n, d);
  for (int j = 0; j < n; ++j) {
    Eigen::VectorXd acc = Eigen::VectorXd::Zero(d);
    for (std::size_t s = 0; s < shards.size(); ++s) {
      const Eigen::Map<const Eigen::VectorXd> theta(
          shards[s].draws.data() + static_cast<std::size_t>(j) * static_cast<std::size_t>(d), d);
      acc += weights[s] * theta;
    }
    combined.row(j) = total.solve(acc).transpose();
  }
  out.draws.assign(combined.data(), combined.data() + combined.size());
  const Eigen::RowVectorXd mean = combined.colwise().mean();
  out.mean.assign(mean.data(), mean.data() + d);
  const Eigen::Map<const RowMatrix> cm(out.draws.data(), n, d);
  const Eigen::MatrixXd cov = n > 1 ? SampleCovariance(cm) : Eigen::MatrixXd::Zero(d, d);
  out.covariance.assign(cov.data(), cov.data() + cov.size());
  return out;
}

}  // namespace homodyne::cmc
