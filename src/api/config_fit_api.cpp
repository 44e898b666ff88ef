// homodyne/config_fit.h: the config read as the command line reads it, then the phases of
// `homodyne --config` (RunNlsqPhase and RunCmcPhase of src/app, which the API cannot
// include) on the library's layers, without the result files.
#include <csignal>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/interrupt.h"
#include "cmc/cmc_checkpoint.h"
#include "cmc/cmc_fit.h"
#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "core/log.h"
#include "global/fit_pipeline.h"
#include "global/global_stage.h"
#include "global/multistart.h"
#include "homodyne/config_fit.h"
#include "io/dataset.h"
#include "nlsq/memory_plan.h"
#include "nlsq/nlsq_checkpoint.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"
#include "parallel/comm.h"
#include "translate.h"

namespace homodyne {
namespace {

config::Config ReadConfig(const ConfigFitOptions& o) {
  if (o.threads < 1) ThrowBadInput("must be at least 1", "ConfigFitOptions", "threads");
  config::ReadOptions ro;
  ro.require_data_file = o.data_file.empty();
  ro.strict = o.strict;
  if (!o.config_yaml.empty()) {
    std::string source = o.config_file;
    if (source.empty()) source.assign("<config text>");
    return config::ReadConfigString(o.config_yaml, source, ro);
  }
  if (o.config_file.empty()) {
    ThrowBadInput("no config: set config_file or config_yaml", "ConfigFitOptions", "config_file");
  }
  return config::ReadConfigFile(o.config_file, ro);
}

// Every rank reads the config; bad input stops all of them alike.
config::Config ReadConfigCollectively(const Comm& comm, const ConfigFitOptions& o) {
  return RunCollectively(comm, [&] { return ReadConfig(o); });
}

nlsq::NlsqRunOptions RunOptions(const Comm& comm, const config::Config& cfg,
                                const ConfigFitOptions& o) {
  nlsq::NlsqRunOptions run;
  run.data_file = o.data_file;
  run.initial = o.initial;
  run.threads = o.threads;
  run.print_progress = o.print_progress;
  run.ranks_on_node = nlsq::QueryNodeMemory(comm).ranks_on_node;
  if (o.stop_on_request) run.checkpoints = api::StopSettings(comm, cfg, o.stop_directory);
  return run;
}

// RunNlsqPhase of the command line: CMA-ES (inside the pipeline) has priority over
// multistart, which fits on rank groups and leaves the answer on the root.
nlsq::NlsqRunResult RunNlsq(const Comm& comm, const config::Config& cfg,
                            const nlsq::NlsqRunOptions& run, const Logger& logger) {
  const auto& multi_start = cfg.optimization.nlsq.multi_start;
  const auto global = RunCollectively(
      comm, [&] { return global::GlobalStageOptions::FromConfig(cfg.optimization.nlsq.cmaes); });
  const global::GlobalSelection selection = global::SelectGlobalStage(cfg, global);
  if (multi_start.enable && !selection.run) {
    const auto ms =
        RunCollectively(comm, [&] { return global::MultiStartOptions::FromConfig(multi_start); });
    return global::RunMultiStartFit(comm, cfg, run, ms, logger, nullptr);
  }
  return global::RunNlsqPipeline(comm, cfg, run, logger);
}

}  // namespace

XpcsData LoadConfigData(const ConfigFitOptions& options) {
  const config::Config cfg = ReadConfig(options);
  io::LoadOptions load = LoadOptionsFromConfig(cfg, options.data_file);
  load.Validate();
  io::Dataset dataset = io::LoadDataset(load, Logger::Silent());
  XpcsData data;
  data.source = dataset.meta.file;
  data.q = dataset.meta.q_physics;
  data.dt = dataset.meta.dt;
  data.phi_deg = dataset.meta.phi_values();
  data.c2 = std::move(dataset.c2);
  return data;
}

AnalysisMode ConfigAnalysisMode(const ConfigFitOptions& options) {
  // The mode needs no data file: the config may name none.
  ConfigFitOptions no_data = options;
  no_data.data_file.push_back('-');
  return ReadConfig(no_data).analysis_mode;
}

NlsqSummary FitNlsqConfig(MPI_Comm comm, const ConfigFitOptions& options) {
  const Comm c(comm);
  const config::Config cfg = ReadConfigCollectively(c, options);
  const nlsq::NlsqRunOptions run = RunOptions(c, cfg, options);
  const Logger logger(c.rank(), options.print_progress ? LogLevel::kInfo : LogLevel::kError);
  return api::ToNlsqSummary(RunNlsq(c, cfg, run, logger));
}

CmcSummary FitCmcConfig(MPI_Comm comm, const ConfigFitOptions& options, NlsqSummary* nlsq) {
  const Comm c(comm);
  const config::Config cfg = ReadConfigCollectively(c, options);
  const nlsq::NlsqRunOptions run = RunOptions(c, cfg, options);
  const Logger logger(c.rank(), options.print_progress ? LogLevel::kInfo : LogLevel::kError);
  nlsq::NlsqRunResult warm = RunNlsq(c, cfg, run, logger);
  // RunCmcPhase: the root's answer on every rank.
  for (auto* v : {&warm.expanded, &warm.expanded_uncertainty, &warm.report.physical_values,
                  &warm.report.physical_uncertainties}) {
    Broadcast(c, *v);
  }
  if (nlsq != nullptr) *nlsq = api::ToNlsqSummary(warm);
  cmc::CmcRunOptions co;
  co.data_file = options.data_file;
  co.threads = options.threads;
  co.print_progress = options.print_progress;
  co.dense_metric = ConfigDenseMetric(cfg);
  co.warm_start = &warm;
  if (options.stop_on_request) {
    const checkpoint::CheckpointSettings s = *run.checkpoints;
    checkpoint::CmcCheckpointSettings cs;
    cs.enabled = false;
    cs.stop_on_signal = true;
    cs.dir = s.dir / "cmc";
    cs.config_description = s.config_description;
    co.checkpoints = cs;
  }
  cmc::CmcRunResult r = cmc::RunCmcFit(c, cfg, co, logger);
  cmc::BroadcastCmcResult(c, r);
  std::vector<double> phi = warm.report.phi_deg;
  Broadcast(c, phi);
  return api::ToCmcSummary(r, phi, c.size(), options.threads);
}

void RequestStop() noexcept { checkpoint::SetStopRequest(SIGINT); }
void ClearStopRequest() noexcept { checkpoint::ClearStopRequest(); }

}  // namespace homodyne
