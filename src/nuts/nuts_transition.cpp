#include "nuts/nuts_transition.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/random.h"
#include "nuts/dense_metric.h"
#include "nuts/diag_metric.h"
#include "nuts/leapfrog.h"
#include "nuts/uturn.h"

namespace homodyne::nuts {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogSumExp(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  if (a == std::numeric_limits<double>::infinity() && b == a) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

std::vector<double> Add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

// The recursive half of a transition: builds subtrees of 2^depth leapfrog steps and
// keeps the counters shared by all of them.
template <typename Metric>
class TreeBuilder {
 public:
  TreeBuilder(const LogDensity& density, const Metric& metric, CounterRng& rng, double h0,
              double epsilon)
      : density_(density), metric_(metric), rng_(rng), h0_(h0), epsilon_(epsilon) {}

  // Extends the trajectory from `z` (its end in direction `sign`, advanced in place).
  // [out] propose: the subtree's multinomial draw; [out] ends: momenta at both ends in
  // building order (first = adjacent to the existing trajectory) and Σp;
  // [inout] log_sum_weight: log Σ exp(H₀ − H) accumulated with the subtree's weights.
  // Returns false when the subtree diverged or made a U-turn inside.
  bool Build(int depth, double sign, PhasePoint& z, PhasePoint& propose, SubtreeEnds& ends,
             double& log_sum_weight) {
    if (depth == 0) {
      LeapfrogStep(density_, metric_, z, sign * epsilon_);
      ++n_leapfrog_;
      const double h = Hamiltonian(metric_, z);
      if (!(h - h0_ <= kMaxDeltaH)) divergent_ = true;  // NaN energy counts as divergent
      log_sum_weight = LogSumExp(log_sum_weight, h0_ - h);
      sum_metro_prob_ += h0_ - h > 0.0 ? 1.0 : std::exp(h0_ - h);
      propose = z;
      ends.p_first = z.p;
      ends.p_last = z.p;
      ends.p_sharp_first.resize(z.p.size());
      metric_.Sharp(z.p, ends.p_sharp_first);
      ends.p_sharp_last = ends.p_sharp_first;
      ends.rho = z.p;
      return !divergent_;
    }
    SubtreeEnds init;
    double log_weight_init = kNegInf;
    if (!Build(depth - 1, sign, z, propose, init, log_weight_init)) return false;

    PhasePoint propose_final;
    SubtreeEnds final_half;
    double log_weight_final = kNegInf;
    if (!Build(depth - 1, sign, z, propose_final, final_half, log_weight_final)) return false;

    // Uniform progressive sampling: the second half's draw wins with probability
    // W_final / (W_init + W_final).
    const double log_weight_subtree = LogSumExp(log_weight_init, log_weight_final);
    log_sum_weight = LogSumExp(log_sum_weight, log_weight_subtree);
    if (log_weight_final > log_weight_subtree) {
      propose = std::move(propose_final);
    } else if (rng_.Uniform() < std::exp(log_weight_final - log_weight_subtree)) {
      propose = std::move(propose_final);
    }

    const bool persist = MergedSpanContinues(init, final_half);
    ends.rho = Add(init.rho, final_half.rho);
    ends.p_first = std::move(init.p_first);
    ends.p_sharp_first = std::move(init.p_sharp_first);
    ends.p_last = std::move(final_half.p_last);
    ends.p_sharp_last = std::move(final_half.p_sharp_last);
    return persist;
  }

  int n_leapfrog() const { return n_leapfrog_; }
  double sum_metro_prob() const { return sum_metro_prob_; }
  bool divergent() const { return divergent_; }

 private:
  const LogDensity& density_;
  const Metric& metric_;
  CounterRng& rng_;
  double h0_;
  double epsilon_;
  int n_leapfrog_ = 0;
  double sum_metro_prob_ = 0.0;
  bool divergent_ = false;
};

SubtreeEnds Reversed(SubtreeEnds ends) {
  std::swap(ends.p_first, ends.p_last);
  std::swap(ends.p_sharp_first, ends.p_sharp_last);
  return ends;
}

}  // namespace

template <typename Metric>
TransitionStats NutsTransition(const LogDensity& density, const Metric& metric,
                               const TransitionSettings& settings, PhasePoint& z, CounterRng& rng) {
  double epsilon = settings.step_size;
  if (settings.jitter > 0.0) epsilon *= 1.0 + settings.jitter * (2.0 * rng.Uniform() - 1.0);

  metric.SampleMomentum(rng, z.p);
  const double h0 = Hamiltonian(metric, z);

  // The whole trajectory in time order: first = backward end, last = forward end.
  SubtreeEnds trajectory;
  trajectory.p_first = z.p;
  trajectory.p_sharp_first.resize(z.p.size());
  metric.Sharp(z.p, trajectory.p_sharp_first);
  trajectory.p_last = trajectory.p_first;
  trajectory.p_sharp_last = trajectory.p_sharp_first;
  trajectory.rho = z.p;

  PhasePoint z_forward = z;
  PhasePoint z_backward = z;
  PhasePoint z_sample = z;
  PhasePoint z_propose;
  double log_sum_weight = 0.0;  // the initial point has weight exp(H₀ − H₀) = 1

  TreeBuilder<Metric> builder(density, metric, rng, h0, epsilon);
  int depth = 0;
  while (depth < settings.max_depth) {
    SubtreeEnds subtree;
    double log_weight_subtree = kNegInf;
    const bool forward = rng.Uniform() > 0.5;
    const bool valid =
        forward ? builder.Build(depth, 1.0, z_forward, z_propose, subtree, log_weight_subtree)
                : builder.Build(depth, -1.0, z_backward, z_propose, subtree, log_weight_subtree);
    // An invalid subtree is discarded whole; the sample stays as it was.
    if (!valid) break;
    ++depth;

    // Biased progressive sampling: favour the new subtree.
    if (log_weight_subtree > log_sum_weight) {
      z_sample = z_propose;
    } else if (rng.Uniform() < std::exp(log_weight_subtree - log_sum_weight)) {
      z_sample = z_propose;
    }
    log_sum_weight = LogSumExp(log_sum_weight, log_weight_subtree);

    // Merge in time order (backward span first) and apply the three U-turn checks.
    SubtreeEnds backward_span = forward ? std::move(trajectory) : Reversed(std::move(subtree));
    SubtreeEnds forward_span = forward ? std::move(subtree) : std::move(trajectory);
    const bool persist = MergedSpanContinues(backward_span, forward_span);
    trajectory.rho = Add(backward_span.rho, forward_span.rho);
    trajectory.p_first = std::move(backward_span.p_first);
    trajectory.p_sharp_first = std::move(backward_span.p_sharp_first);
    trajectory.p_last = std::move(forward_span.p_last);
    trajectory.p_sharp_last = std::move(forward_span.p_sharp_last);
    if (!persist) break;
  }

  z = std::move(z_sample);
  TransitionStats stats;
  stats.n_leapfrog = builder.n_leapfrog();
  stats.accept_stat = stats.n_leapfrog > 0 ? builder.sum_metro_prob() / stats.n_leapfrog : 0.0;
  stats.tree_depth = depth;
  stats.divergent = builder.divergent();
  stats.energy = Hamiltonian(metric, z);
  stats.potential = z.potential;
  stats.step_size = epsilon;
  return stats;
}

template TransitionStats NutsTransition<DiagMetric>(const LogDensity&, const DiagMetric&,
                                                    const TransitionSettings&, PhasePoint&,
                                                    CounterRng&);
template TransitionStats NutsTransition<DenseMetric>(const LogDensity&, const DenseMetric&,
                                                     const TransitionSettings&, PhasePoint&,
                                                     CounterRng&);

}  // namespace homodyne::nuts
