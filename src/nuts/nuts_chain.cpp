#include "nuts/nuts_chain.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/random.h"
#include "nuts/dense_metric.h"
#include "nuts/diag_metric.h"
#include "nuts/initial_step_size.h"
#include "nuts/log_density.h"
#include "nuts/metric_adaptation.h"
#include "nuts/phase_point.h"
#include "nuts/stepsize_adaptation.h"

namespace homodyne::nuts {

// Everything a chain owns. The metric type is the only axis of variation, so the
// metric-specific steps are virtual and implemented by ChainImpl<Metric> below.
class NutsChain::Impl {
 public:
  Impl(const LogDensity& density, const NutsOptions& options, const RngState& rng_state)
      : density_(density),
        options_(options),
        rng_(rng_state),
        point_(density.dimension()),
        step_size_(options.init_step_size),
        stepsize_adaptation_(DualAveragingOptions{.delta = options.target_accept}),
        metric_adaptation_(options.metric, density.dimension(), options.num_warmup,
                           options.windows) {
    stepsize_adaptation_.SetMuFromStepSize(options.init_step_size);
  }
  virtual ~Impl() = default;

  void SetPosition(std::span<const double> q) {
    if (static_cast<int>(q.size()) != density_.dimension()) {
      ThrowBadInput(fmt::format("initial position has {} values, the log density expects {}",
                                q.size(), density_.dimension()));
    }
    point_.q.assign(q.begin(), q.end());
    UpdatePotentialGradient(density_, point_);
    if (!std::isfinite(point_.potential)) {
      throw Error(ErrorKind::kNumerical, "the log density is not finite at the chain's position");
    }
  }

  IterationResult Step() {
    HOMODYNE_CHECK(!Done(), "NutsChain::Step called after the last iteration");
    IterationResult result;
    result.iteration = iteration_;
    result.warmup = iteration_ < options_.num_warmup;
    if (result.warmup && iteration_ == 0) step_size_ = InitialStepSize();

    const TransitionSettings settings{step_size_, options_.jitter, options_.max_tree_depth};
    result.stats = Transition(settings);

    if (result.warmup) {
      step_size_ = stepsize_adaptation_.Learn(result.stats.accept_stat);
      std::vector<double> inverse_metric;
      if (metric_adaptation_.Learn(point_.q, inverse_metric)) {
        SetInverseMetric(inverse_metric);
        step_size_ = InitialStepSize();
        stepsize_adaptation_.SetMuFromStepSize(step_size_);
        stepsize_adaptation_.Restart();
        result.metric_updated = true;
      }
      if (iteration_ == options_.num_warmup - 1) step_size_ = stepsize_adaptation_.FinalStepSize();
    }
    ++iteration_;
    result.position = point_.q;
    return result;
  }

  bool Done() const { return iteration_ >= options_.num_warmup + options_.num_samples; }

  NutsChainState SaveState() const {
    NutsChainState state;
    state.dimension = density_.dimension();
    state.metric_kind = static_cast<int>(options_.metric);
    state.iteration = iteration_;
    state.position = point_.q;
    state.step_size = step_size_;
    state.inverse_metric = InverseMetric();
    const DualAveragingState& da = stepsize_adaptation_.state();
    state.da_counter = da.counter;
    state.da_s_bar = da.s_bar;
    state.da_x_bar = da.x_bar;
    state.da_mu = da.mu;
    const WindowState& windows = metric_adaptation_.windows().state();
    state.window_counter = windows.counter;
    state.window_size = windows.window_size;
    state.window_next_end = windows.next_end;
    const WelfordState& welford = metric_adaptation_.estimator_state();
    state.welford_count = welford.count;
    state.welford_mean = welford.mean;
    state.welford_m2 = welford.m2;
    state.rng = rng_.state();
    return state;
  }

  void LoadState(const NutsChainState& state) {
    const int n = density_.dimension();
    const std::size_t metric_size =
        options_.metric == MetricKind::kDiag ? n : static_cast<std::size_t>(n) * n;
    if (state.dimension != n || state.metric_kind != static_cast<int>(options_.metric) ||
        state.inverse_metric.size() != metric_size ||
        state.welford_mean.size() != static_cast<std::size_t>(n) ||
        state.welford_m2.size() != metric_size || state.iteration < 0 ||
        state.iteration > options_.num_warmup + options_.num_samples) {
      ThrowBadInput(fmt::format(
          "saved NUTS chain state does not match: dimension {} (expected {}), metric {} "
          "(expected {}), iteration {} of {}",
          state.dimension, n, state.metric_kind, static_cast<int>(options_.metric), state.iteration,
          options_.num_warmup + options_.num_samples));
    }
    SetPosition(state.position);
    SetInverseMetric(state.inverse_metric);
    iteration_ = state.iteration;
    step_size_ = state.step_size;
    stepsize_adaptation_.set_state({state.da_counter, state.da_s_bar, state.da_x_bar, state.da_mu});
    metric_adaptation_.windows().set_state(
        {state.window_counter, state.window_size, state.window_next_end});
    metric_adaptation_.set_estimator_state(
        {state.welford_count, state.welford_mean, state.welford_m2});
    rng_ = CounterRng(state.rng);
  }

  std::int64_t iteration() const { return iteration_; }
  double step_size() const { return step_size_; }
  std::span<const double> position() const { return point_.q; }
  const NutsOptions& options() const { return options_; }

  virtual std::vector<double> InverseMetric() const = 0;

 protected:
  virtual TransitionStats Transition(const TransitionSettings& settings) = 0;
  virtual double InitialStepSize() = 0;
  virtual void SetInverseMetric(const std::vector<double>& inverse_metric) = 0;

  const LogDensity& density_;
  NutsOptions options_;
  CounterRng rng_;
  PhasePoint point_;  // current state; potential and gradient valid for q
  double step_size_;  // nominal ε
  StepSizeAdaptation stepsize_adaptation_;
  MetricAdaptation metric_adaptation_;
  std::int64_t iteration_ = 0;  // iterations done
};

namespace {

template <typename Metric>
class ChainImpl final : public NutsChain::Impl {
 public:
  ChainImpl(const LogDensity& density, const NutsOptions& options, const RngState& rng_state)
      : Impl(density, options, rng_state), metric_(density.dimension()) {}

  std::vector<double> InverseMetric() const override { return metric_.inverse_metric(); }

 protected:
  TransitionStats Transition(const TransitionSettings& settings) override {
    return NutsTransition(density_, metric_, settings, point_, rng_);
  }
  double InitialStepSize() override {
    return FindInitialStepSize(density_, metric_, point_, step_size_, rng_);
  }
  void SetInverseMetric(const std::vector<double>& inverse_metric) override {
    metric_.SetInverseMetric(inverse_metric);
  }

 private:
  Metric metric_;
};

std::unique_ptr<NutsChain::Impl> MakeImpl(const LogDensity& density, const NutsOptions& options,
                                          const RngState& rng_state) {
  options.Validate();
  if (density.dimension() < 1) ThrowBadInput("the log density has no parameters");
  if (options.metric == MetricKind::kDense) {
    return std::make_unique<ChainImpl<DenseMetric>>(density, options, rng_state);
  }
  return std::make_unique<ChainImpl<DiagMetric>>(density, options, rng_state);
}

}  // namespace

NutsChain::NutsChain(const LogDensity& density, const NutsOptions& options,
                     std::span<const double> initial_position, std::uint64_t shard,
                     std::uint64_t chain)
    : impl_(MakeImpl(density, options, RngState{options.seed, shard, chain, 0})) {
  impl_->SetPosition(initial_position);
}

NutsChain::NutsChain(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

NutsChain NutsChain::Restore(const LogDensity& density, const NutsOptions& options,
                             const NutsChainState& state) {
  auto impl = MakeImpl(density, options, state.rng);
  impl->LoadState(state);
  return NutsChain(std::move(impl));
}

NutsChain::NutsChain(NutsChain&&) noexcept = default;
NutsChain& NutsChain::operator=(NutsChain&&) noexcept = default;
NutsChain::~NutsChain() = default;

IterationResult NutsChain::Step() {
  IterationResult result = impl_->Step();
  if (counter_ != nullptr) counter_->fetch_add(1, std::memory_order_relaxed);
  return result;
}
bool NutsChain::Done() const { return impl_->Done(); }
std::int64_t NutsChain::iteration() const { return impl_->iteration(); }
bool NutsChain::InWarmup() const { return impl_->iteration() < impl_->options().num_warmup; }
double NutsChain::step_size() const { return impl_->step_size(); }
std::span<const double> NutsChain::position() const { return impl_->position(); }
std::vector<double> NutsChain::inverse_metric() const { return impl_->InverseMetric(); }
const NutsOptions& NutsChain::options() const { return impl_->options(); }
NutsChainState NutsChain::SaveState() const { return impl_->SaveState(); }

}  // namespace homodyne::nuts
