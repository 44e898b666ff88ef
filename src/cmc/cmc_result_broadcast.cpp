// BroadcastCmcResult: rank 0's CMC result packed into one array of numbers and one of
// texts, broadcast, and unpacked in the same field order on the other ranks.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cmc/cmc_fit.h"
#include "parallel/broadcast.h"

namespace homodyne::cmc {

namespace {

// Numbers and texts of a result in a fixed order: packed on the root, unpacked elsewhere.
class Packer {
 public:
  explicit Packer(bool pack) : pack_(pack) {}
  void operator()(double& v) {
    if (pack_) {
      numbers_.push_back(v);
    } else {
      v = numbers_[next_number_++];
    }
  }
  void operator()(int& v) { Integer(v); }
  void operator()(std::int64_t& v) { Integer(v); }
  void operator()(bool& v) {
    double d = v ? 1.0 : 0.0;
    (*this)(d);
    v = d != 0.0;
  }
  void operator()(std::string& v) {
    std::int64_t n = static_cast<std::int64_t>(v.size());
    (*this)(n);
    if (pack_) {
      texts_ += v;
    } else {
      v = texts_.substr(next_char_, static_cast<std::size_t>(n));
      next_char_ += static_cast<std::size_t>(n);
    }
  }
  template <typename T, typename Fn>
  void Each(std::vector<T>& v, Fn&& fn) {
    std::int64_t n = static_cast<std::int64_t>(v.size());
    (*this)(n);
    v.resize(static_cast<std::size_t>(n));
    for (T& x : v) fn(x);
  }
  void Values(std::vector<double>& v) {
    Each(v, [&](double& x) { (*this)(x); });
  }
  std::vector<double>& numbers() { return numbers_; }
  std::string& texts() { return texts_; }

 private:
  template <typename I>
  void Integer(I& v) {
    double d = static_cast<double>(v);
    (*this)(d);
    v = static_cast<I>(d);
  }
  bool pack_;
  std::vector<double> numbers_;
  std::string texts_;
  std::size_t next_number_ = 0, next_char_ = 0;
};

void PackResult(Packer& p, CmcRunResult& r) {
  p(r.analysis_mode);
  p(r.per_angle_mode);
  p(r.num_shards);
  p(r.num_chains);
  p(r.num_warmup);
  p(r.num_samples);
  p(r.target_accept);
  p(r.known_sigma);
  p(r.sampled_coordinates);
  p(r.n_angles);
  p(r.n_time_points);
  p(r.n_points);
  p(r.q);
  p.Each(r.names, [&](std::string& n) { p(n); });
  p.Values(r.draws);
  p.Each(r.shard_draws, [&](std::vector<double>& d) { p.Values(d); });
  p.Each(r.parameters, [&](ParameterSummary& s) {
    p(s.name);
    p(s.mean);
    p(s.std);
    p(s.held);
  });
  p.Each(r.shards, [&](ShardDiagnostics& d) {
    p(d.shard);
    p(d.points);
    p(d.max_rhat);
    p(d.min_ess);
    p(d.divergence_rate);
    p(d.acceptance_rate);
    p(d.noise_sigma_mean);
    p(d.treedepth_saturation_rate);
    p(d.gradient_evaluations);
    p(d.warmup_gradient_evaluations);
    p(d.divergences);
    p(d.treedepth_hits);
    p.Values(d.rhat);
    p.Values(d.ess_bulk);
    p.Values(d.ess_tail);
    p.Each(d.tree_depth_histogram, [&](std::int64_t& c) { p(c); });
    p(d.step_size_mean);
    p(d.sampling_seconds);
    p(d.num_warmup);
    p(d.warmup_attempts);
    p(d.coordinates);
    p(d.coordinates_reason);
    p(d.used);
    p(d.rejection);
  });
  p(r.shards_used);
  p(r.combination_method);
  p.Each(r.warnings, [&](std::string& w) { p(w); });
  p.Each(r.bimodality, [&](BimodalParameter& m) {
    p(m.name);
    p(m.shards_tested);
    p.Each(m.bimodal_shards, [&](int& s) { p(s); });
    p.Each(m.unconfirmed_shards, [&](int& s) { p(s); });
    p.Each(m.screened_shards, [&](int& s) { p(s); });
    p(m.lower_mode);
    p(m.upper_mode);
    p(m.flagged);
  });
  p(r.mode_aware.applied);
  p(r.mode_aware.reason);
  p.Each(r.mode_aware.clusters, [&](ModeCluster& c) {
    p(c.label);
    p.Each(c.shards, [&](int& s) { p(s); });
    p(c.weight);
    p(c.draws);
  });
  p.Each(r.nlsq_comparison, [&](NlsqComparison& c) {
    p(c.name);
    p(c.cmc_mean);
    p(c.cmc_std);
    p(c.nlsq_value);
    p(c.nlsq_std);
    p(c.z);
    p(c.disagrees);
  });
  p(r.max_rhat);
  p(r.min_ess);
  p(r.acceptance_rate);
  p(r.seconds);
  p(r.all_converged);
  p(r.rhat_threshold);
  p(r.ess_threshold);
}

}  // namespace

void BroadcastCmcResult(const Comm& world, CmcRunResult& result) {
  Packer packer(/*pack=*/world.is_root());
  if (world.is_root()) PackResult(packer, result);
  Broadcast(world, packer.numbers());
  Broadcast(world, packer.texts());
  if (world.is_root()) return;
  result = CmcRunResult{};
  PackResult(packer, result);  // unpacks
}

}  // namespace homodyne::cmc
