#include "cmc/consensus.h"

#include <Eigen/Dense>

#include <algorithm>

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

ConsensusResult CombineConsensus(const std::vector<ShardDraws>& shards) {
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
  Eigen::MatrixXd w_sum = Eigen::MatrixXd::Zero(d, d);
  std::vector<Eigen::MatrixXd> weights;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const Eigen::Map<const RowMatrix> x(shards[s].draws.data(), shards[s].count(), d);
    const Eigen::MatrixXd cov = SampleCovariance(x);
    out.shard_covariances.emplace_back(cov.data(), cov.data() + cov.size());
    const Eigen::LLT<Eigen::MatrixXd> llt(cov);
    if (llt.info() != Eigen::Success) {
      ThrowBadInput(
          fmt::format("shard {}: the draws' covariance is not positive definite "
                      "(a parameter did not move?)",
                      s));
    }
    weights.push_back(llt.solve(Eigen::MatrixXd::Identity(d, d)));
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
