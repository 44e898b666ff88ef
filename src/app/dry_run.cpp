#include "app/dry_run.h"

#include <cstdio>

#include <fmt/format.h>

#include "config/config_bridge.h"

namespace homodyne {

void RunDryRun(const Comm& comm, const config::Config& cfg, const std::string& data_file_override,
               const nlsq::FitMemoryOptions& options, const Logger& logger) {
  const io::LocalData layout =
      io::LoadDistributedLayout(comm, LoadOptionsFromConfig(cfg, data_file_override), logger);
  const nlsq::MemoryPlan plan = nlsq::PlanFitMemory(comm, cfg, options, layout);
  const std::vector<std::string> lines = nlsq::DescribeMemoryPlans(comm, plan, layout);
  if (!comm.is_root()) return;
  const io::DatasetMetadata& meta = layout.meta;
  std::string text = fmt::format(
      "dry run: {} ({}), {} angle(s), {} frames, {} fitted pairs, {} rank(s) x {} thread(s)\n",
      meta.file, io::ToString(meta.format), meta.n_angles(), meta.n_frames,
      layout.plan.total_points(), comm.size(), options.threads);
  text += fmt::format("strategy: {} (requested {}; rank 0: {})\n", nlsq::ToString(plan.strategy),
                      nlsq::ToString(options.strategy), plan.reason);
  text += "memory plan per rank:\n";
  for (const auto& l : lines) text += "  " + l + "\n";
  text += layout.plan.Table();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += "dry run: no fit run, nothing written\n";
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace homodyne
