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

Eigen::VectorXd DrawOf(const ShardDraws& shard, int j) {
  const auto d = static_cast<std::size_t>(shard.dims);
  return Eigen::Map<const Eigen::VectorXd>(shard.draws.data() + static_cast<std::size_t>(j) * d,
                                           shard.dims);
}

// W_s = Σ̂_s⁻¹: the j-th draw is (Σ_s W_s)⁻¹ Σ_s W_s θ_s,j.
RowMatrix CombinePerShard(const std::vector<ShardDraws>& shards,
                          const std::vector<Eigen::MatrixXd>& covs, int n) {
  const auto d = static_cast<int>(covs.front().rows());
  Eigen::MatrixXd w_sum = Eigen::MatrixXd::Zero(d, d);
  std::vector<Eigen::MatrixXd> weights;
  for (const auto& cov : covs) {
    weights.push_back(Eigen::LLT<Eigen::MatrixXd>(cov).solve(Eigen::MatrixXd::Identity(d, d)));
    w_sum += weights.back();
  }
  const Eigen::LLT<Eigen::MatrixXd> total(w_sum);
  RowMatrix combined(n, d);
  for (int j = 0; j < n; ++j) {
    Eigen::VectorXd acc = Eigen::VectorXd::Zero(d);
    for (std::size_t s = 0; s < shards.size(); ++s) acc += weights[s] * DrawOf(shards[s], j);
    combined.row(j) = total.solve(acc).transpose();
  }
  return combined;
}

// Pooled directions, per-shard precisions (consensus.h): the axes e_k are the eigenvectors
// of the shards' mean correlation matrix (coordinates scaled by D̄, the sds of the mean
// covariance); along e_k shard s has the variance v_sk = e_kᵀ D̄⁻¹ Σ̂_s D̄⁻¹ e_k and
// weight 1/v_sk. In y = Eᵀ D̄⁻¹ θ the combined draw is y_k = Σ_s y_sk / v_sk / Σ_s 1/v_sk,
// i.e. W_s = D̄⁻¹ E diag(1/v_sk) Eᵀ D̄⁻¹.
RowMatrix CombinePooledDirections(const std::vector<ShardDraws>& shards,
                                  const std::vector<Eigen::MatrixXd>& covs, int n) {
  const auto d = static_cast<int>(covs.front().rows());
  Eigen::MatrixXd mean_cov = Eigen::MatrixXd::Zero(d, d);
  for (const auto& cov : covs) mean_cov += cov / static_cast<double>(covs.size());
  const Eigen::VectorXd scale = mean_cov.diagonal().cwiseSqrt();
  const Eigen::MatrixXd corr =
      scale.cwiseInverse().asDiagonal() * mean_cov * scale.cwiseInverse().asDiagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(corr);
  // to_y = Eᵀ D̄⁻¹; back = D̄ E.
  const Eigen::MatrixXd to_y = eig.eigenvectors().transpose() * scale.cwiseInverse().asDiagonal();
  const Eigen::MatrixXd back = scale.asDiagonal() * eig.eigenvectors();
  std::vector<Eigen::VectorXd> precision;  // 1/v_sk per shard
  Eigen::VectorXd total = Eigen::VectorXd::Zero(d);
  for (const auto& cov : covs) {
    precision.push_back((to_y * cov * to_y.transpose()).diagonal().cwiseInverse());
    total += precision.back();
  }
  RowMatrix combined(n, d);
  for (int j = 0; j < n; ++j) {
    Eigen::VectorXd acc = Eigen::VectorXd::Zero(d);
    for (std::size_t s = 0; s < shards.size(); ++s) {
      acc += precision[s].cwiseProduct(to_y * DrawOf(shards[s], j));
    }
    combined.row(j) = (back * acc.cwiseQuotient(total)).transpose();
  }
  return combined;
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
  }
  RowMatrix combined(n, d);
  if (shards.size() == 1) {
    // One shard is its own consensus: its draws, bit for bit (the full-data posterior).
    combined = Eigen::Map<const RowMatrix>(shards.front().draws.data(), n, d);
  } else if (shape == ConsensusShape::kPerShard) {
    combined = CombinePerShard(shards, covs, n);
  } else {
    combined = CombinePooledDirections(shards, covs, n);
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
