#include "cmc/mode_aware.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace homodyne::cmc {
namespace {

struct Flagged {
  std::size_t index = 0;  // into names
  double lower = 0.0, upper = 0.0, width = 1.0;
  std::vector<int> bimodal_shards;
};

// Squared distances of a point to the lower and the upper centroid.
std::pair<double, double> Distances(const double* theta, const std::vector<Flagged>& f) {
  double lo = 0.0, hi = 0.0;
  for (const Flagged& p : f) {
    const double v = theta[p.index];
    lo += std::pow((v - p.lower) / p.width, 2);
    hi += std::pow((v - p.upper) / p.width, 2);
  }
  return {lo, hi};
}

}  // namespace

ModeAwareResult CombineModeAware(const std::vector<ShardDraws>& kept,
                                 const std::vector<int>& kept_ids,
                                 const std::vector<ShardDraws>& theta,
                                 const std::vector<std::string>& names,
                                 const std::vector<BimodalParameter>& bimodality,
                                 const std::vector<double>& lower, const std::vector<double>& upper,
                                 ConsensusShape shape) {
  ModeAwareResult out;
  std::vector<Flagged> flagged;
  for (const BimodalParameter& b : bimodality) {
    if (!b.flagged) continue;
    const auto it = std::find(names.begin(), names.end(), b.name);
    if (it == names.end()) continue;
    Flagged f;
    f.index = static_cast<std::size_t>(it - names.begin());
    f.lower = b.lower_mode;
    f.upper = b.upper_mode;
    const double w = upper[f.index] - lower[f.index];
    f.width = w > 0.0 && std::isfinite(w) ? w : 1.0;
    f.bimodal_shards = b.bimodal_shards;
    flagged.push_back(f);
  }
  if (flagged.empty()) {
    out.reason = "no parameter is bimodal in enough shards";
    return out;
  }
  const int dims = kept.empty() ? 0 : kept.front().dims;
  std::vector<ShardDraws> populations[2];
  out.clusters = {{"lower", {}, 0.0, 0}, {"upper", {}, 0.0, 0}};
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const int id = kept_ids[k];
    const ShardDraws& t = theta[static_cast<std::size_t>(id)];
    const int n = kept[k].count();
    if (t.count() != n || n == 0) continue;
    bool bimodal = false;
    for (const Flagged& f : flagged) {
      bimodal = bimodal || std::find(f.bimodal_shards.begin(), f.bimodal_shards.end(), id) !=
                               f.bimodal_shards.end();
    }
    if (bimodal) {  // each population gets the draws nearer to its centroid
      ShardDraws part[2] = {{dims, {}}, {dims, {}}};
      for (int j = 0; j < n; ++j) {
        const auto [lo, hi] =
            Distances(t.draws.data() + static_cast<std::size_t>(j * t.dims), flagged);
        const double* q = kept[k].draws.data() + static_cast<std::size_t>(j * dims);
        part[lo <= hi ? 0 : 1].draws.insert(part[lo <= hi ? 0 : 1].draws.end(), q, q + dims);
      }
      for (int c = 0; c < 2; ++c) {
        // The consensus needs a sample covariance: a few more draws than dimensions.
        if (part[c].count() < 2 * (dims + 1)) continue;
        populations[c].push_back(std::move(part[c]));
        out.clusters[static_cast<std::size_t>(c)].shards.push_back(id);
      }
    } else {  // a unimodal shard joins the population nearer to its mean
      std::vector<double> mean(static_cast<std::size_t>(t.dims), 0.0);
      for (int j = 0; j < n; ++j) {
        for (int p = 0; p < t.dims; ++p) {
          mean[static_cast<std::size_t>(p)] += t.draws[static_cast<std::size_t>(j * t.dims + p)];
        }
      }
      for (double& m : mean) m /= n;
      const auto [lo, hi] = Distances(mean.data(), flagged);
      const int c = lo <= hi ? 0 : 1;
      populations[c].push_back(kept[k]);
      out.clusters[static_cast<std::size_t>(c)].shards.push_back(id);
    }
  }
  // Each population's consensus; the mixture by shard counts.
  ConsensusResult combined[2];
  int total_shards = 0;
  for (int c = 0; c < 2; ++c) total_shards += static_cast<int>(populations[c].size());
  if (populations[0].empty() || populations[1].empty()) {
    out.reason = "every shard fell into one population";
    return out;
  }
  try {
    for (int c = 0; c < 2; ++c) combined[c] = CombineConsensus(populations[c], shape);
  } catch (const std::exception& e) {
    out.reason = std::string("a population could not be combined: ") + e.what();
    return out;
  }
  const int n_out = std::max(combined[0].draws.size(), combined[1].draws.size()) /
                    static_cast<std::size_t>(std::max(dims, 1));
  out.draws.dims = dims;
  for (int c = 0; c < 2; ++c) {
    ModeCluster& cl = out.clusters[static_cast<std::size_t>(c)];
    cl.weight = static_cast<double>(populations[c].size()) / total_shards;
    const int available = static_cast<int>(combined[c].draws.size()) / dims;
    cl.draws = std::min(available, static_cast<int>(std::lround(cl.weight * n_out)));
    out.draws.draws.insert(
        out.draws.draws.end(), combined[c].draws.begin(),
        combined[c].draws.begin() + static_cast<std::ptrdiff_t>(cl.draws) * dims);
  }
  out.applied = true;
  return out;
}

}  // namespace homodyne::cmc
