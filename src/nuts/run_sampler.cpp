#include "nuts/run_sampler.h"

#include <chrono>

#include <fmt/format.h>

namespace homodyne::nuts {

std::string NutsSummary::BriefReport() const {
  return fmt::format(
      "NUTS: {} warmup + {} draws, step size {:.4g}, {} divergent, {} at max tree depth, mean "
      "accept_stat {:.3f}, {} gradient evaluations, {:.3g} s warmup + {:.3g} s sampling{}",
      num_warmup, num_draws, step_size, num_divergent, num_max_treedepth, mean_accept_stat,
      num_gradient_evaluations, warmup_seconds, sampling_seconds,
      stopped_early ? " (stopped early)" : "");
}

std::vector<double> ChainRun::Parameter(int parameter) const {
  std::vector<double> column;
  if (dimension == 0) return column;
  column.reserve(draws.size() / dimension);
  for (std::size_t i = static_cast<std::size_t>(parameter); i < draws.size(); i += dimension) {
    column.push_back(draws[i]);
  }
  return column;
}

ChainRun RunChain(NutsChain& chain, const IterationCallback& callback,
                  std::int64_t max_iterations) {
  ChainRun run;
  run.dimension = static_cast<int>(chain.position().size());
  NutsSummary& summary = run.summary;
  summary.num_warmup = 0;
  summary.num_draws = 0;
  summary.num_divergent = 0;
  summary.num_max_treedepth = 0;
  summary.num_gradient_evaluations = 0;
  double accept_sum = 0.0;
  std::int64_t done = 0;
  while (!chain.Done() && (max_iterations < 0 || done < max_iterations)) {
    const auto start = std::chrono::steady_clock::now();
    const IterationResult result = chain.Step();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++done;
    (result.warmup ? summary.warmup_seconds : summary.sampling_seconds) += seconds;
    summary.num_gradient_evaluations += result.stats.n_leapfrog;
    if (result.warmup) {
      ++summary.num_warmup;
      run.warmup_stats.push_back(result.stats);
    } else {
      ++summary.num_draws;
      run.stats.push_back(result.stats);
      run.draws.insert(run.draws.end(), result.position.begin(), result.position.end());
      accept_sum += result.stats.accept_stat;
      if (result.stats.divergent) ++summary.num_divergent;
      if (result.stats.tree_depth >= chain.options().max_tree_depth) ++summary.num_max_treedepth;
    }
    if (callback && !callback(chain, result)) {
      break;
    }
  }
  summary.stopped_early = !chain.Done();
  if (summary.num_draws > 0) summary.mean_accept_stat = accept_sum / summary.num_draws;
  if (!chain.InWarmup()) summary.step_size = chain.step_size();
  summary.inverse_metric = chain.inverse_metric();
  return run;
}

}  // namespace homodyne::nuts
