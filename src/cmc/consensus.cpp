#include "cmc/consensus.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

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

// Per-coordinate precisions (consensus.h): shard s weighs coordinate i by 1/v_si, v_si its
// own variance of it; the combined coordinate is Σ_s θ_si,j / v_si / Σ_s 1/v_si.
RowMatrix CombinePerCoordinate(const std::vector<ShardDraws>& shards,
                               const std::vector<Eigen::MatrixXd>& covs, int n) {
  const auto d = static_cast<int>(covs.front().rows());
  std::vector<Eigen::VectorXd> precision;  // 1/v_si per shard
  Eigen::VectorXd total = Eigen::VectorXd::Zero(d);
  for (const auto& cov : covs) {
    precision.push_back(cov.diagonal().cwiseInverse());
    total += precision.back();
  }
  RowMatrix combined(n, d);
  for (int j = 0; j < n; ++j) {
    Eigen::VectorXd acc = Eigen::VectorXd::Zero(d);
    for (std::size_t s = 0; s < shards.size(); ++s) {
      acc += precision[s].cwiseProduct(DrawOf(shards[s], j));
    }
    combined.row(j) = acc.cwiseQuotient(total).transpose();
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
    combined = CombinePerCoordinate(shards, covs, n);
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
