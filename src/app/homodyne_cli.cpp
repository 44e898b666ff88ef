#include "app/homodyne_cli.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/autotune.h"
#include "app/batch.h"
#include "app/dry_run.h"
#include "app/fitted_data.h"
#include "app/homodyne_options.h"
#include "app/nlsq_report.h"
#include "app/plots.h"
#include "app/run_app.h"
#include "app/run_report.h"
#include "app/warm_start.h"
#include "checkpoint/interrupt.h"
#include "cmc/cmc_fit.h"
#include "config/config_bridge.h"
#include "config/config_digest.h"
#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/output_paths.h"
#include "core/placement.h"
#include "core/version.h"
#include "nlsq/multistart.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/broadcast.h"
#include "parallel/collective.h"
#include "parallel/placement_report.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {
namespace {

// Checked before any work: the output directory must not be an input file, and it must
// exist as a writable directory or be creatable under one. It is created only when the
// results are written, so a run that fails on bad input leaves nothing behind.
void CheckOutputDirectory(const HomodyneCliOptions& opts, const std::string& data_file) {
  namespace fs = std::filesystem;
  const fs::path out = fs::absolute(opts.output_dir).lexically_normal();
  // Never overwrite an input: not the directory itself, nothing in what the run fills.
  OutputLayout layout{out, {}, {"run_report.yaml"}};
  if (opts.method != config::FitMethod::kCmc) {
    layout.owned_dirs.push_back("nlsq");
    layout.files.push_back("homodyne_results.json");
  }
  if (opts.method != config::FitMethod::kNlsq) layout.owned_dirs.push_back("cmc");
  layout.owned_dirs.push_back("plots");  // --save-plots / --plot-* (inputs never live there)
  std::string warm = opts.nlsq_result;
  if (!warm.empty() && fs::is_directory(warm)) {
    warm = fs::exists(fs::path(warm) / "nlsq" / "parameters.json")
               ? (fs::path(warm) / "nlsq" / "parameters.json").string()
               : (fs::path(warm) / "parameters.json").string();
  }
  CheckOutputsSpareInputs(layout, {opts.config, data_file, warm});
  fs::path existing = out;
  while (!existing.empty() && !fs::exists(existing)) existing = existing.parent_path();
  if (!fs::is_directory(existing) || ::access(existing.c_str(), W_OK) != 0) {
    ThrowBadInput(
        fmt::format("cannot create results under {} (not a writable directory)", existing.string()),
        opts.output_dir, "--output-dir");
  }
}

// Threads per rank: --threads, else the autotune cache for this hardware signature, else
// 0 (one per core of the rank's cpuset). Says at -v where the setting came from.
int ChooseThreads(Environment& env, const HomodyneCliOptions& opts) {
  const Logger& log = env.logger();
  if (opts.threads > 0) {
    log.Debug("threads per rank: {} (--threads)", opts.threads);
    return opts.threads;
  }
  if (opts.no_autotune_cache) {
    log.Debug("threads per rank: one per core of the rank's cpuset (--no-autotune-cache)");
    return 0;
  }
  std::string why;
  try {
    const std::string signature =
        HardwareSignature(DescribeTopology(env.topology()), QueryLibraryVersions());
    const auto path = TuneCachePath(signature);
    if (const auto cached = ReadTuneCache(path, signature, &why)) {
      // Tuned on the node's cores; a rank bound to fewer uses all of its own.
      const int threads = std::min(cached->threads_per_rank, env.topology().process_cores());
      log.Debug("threads per rank: {} from the autotune cache {} (measured {}, tuned {})", threads,
                path.string(), cached->created, cached->threads_per_rank);
      return threads;
    }
  } catch (const Error& e) {
    log.Warn("autotune cache ignored: {}", e.what());
    why = "unusable autotune cache";
  }
  log.Debug("threads per rank: one per core of the rank's cpuset ({})", why);
  return 0;
}

// What a run has set up so far: a failed run's report says as much as it knows.
struct RunState {
  std::optional<config::Config> config;
  PlacementPlan placement;
  std::vector<RankPlacement> placements;
  PhaseTimes phases;
};

// A barrier that sleeps instead of polling: the other ranks wait for rank 0's plotting
// without taking the cores the plotting process needs.
void WaitWithoutSpinning(const Comm& world) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(world.get(), &request);
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

RunReportInput BaseReport(const HomodyneCliOptions& opts, const RunState& state) {
  RunReportInput report;
  report.command_line = opts.command_line;
  report.method = opts.plots.PlotOnly() ? std::nullopt : std::optional(opts.method);
  report.config = state.config ? &*state.config : nullptr;
  report.phases = state.phases;
  report.placement = state.placement;
  report.placements = state.placements;
  report.plots = opts.plots.Any() ? "not drawn" : "not requested";
  return report;
}

// --plot-experimental-data / --plot-simulated-data without --save-plots: no fit.
int RunPlotsOnly(Environment& env, const HomodyneCliOptions& opts, const PlotRequest& plots,
                 const std::string& data_file, RunState& state) {
  const std::filesystem::path out(opts.output_dir);
  RunCollectively(env.world(), [&] {
    PhaseTimes::Scope t(state.phases, "plot_inputs");
    if (env.rank() == 0) WritePlotInputs(out, plots, *state.config, data_file, env.logger());
  });
  RunReportInput report = BaseReport(opts, state);
  {
    PhaseTimes::Scope t(report.phases, "plots");
    if (env.rank() == 0) report.plots = DrawPlots(out, plots, env.logger());
    WaitWithoutSpinning(env.world());
  }
  if (env.rank() == 0 && plots.experimental) {
    report.data = SummariseData(*state.config, data_file, nullptr);
  }
  report.status = "plotted";
  report.message = "plots only (no fit)";
  RunCollectively(env.world(), [&] { WriteRunReport(env.world(), out, report); });
  return 0;
}

// CMC checkpoints follow the run's switches (--checkpoint-dir, --resume, streaming.*);
// optimization.cmc.backend_config can turn them off and sets frequency and count.
checkpoint::CmcCheckpointSettings CmcCheckpointSettingsFor(
    const config::Config& cfg, const checkpoint::CheckpointSettings& run,
    const HomodyneCliOptions& opts) {
  const auto& b = cfg.optimization.cmc.backend_config;
  checkpoint::CmcCheckpointSettings c;
  c.enabled = run.enabled && b.enable_checkpoints;
  c.resume = run.resume;
  c.dir = run.dir;
  c.frequency = b.checkpoint_frequency;
  c.keep_last = b.keep_last_checkpoints;
  c.config_description =
      run.config_description + fmt::format("cli.cmc: {} {} {} {} {} {}\n", opts.n_samples,
                                           opts.n_warmup, opts.n_chains, opts.cmc_num_shards,
                                           opts.dense_mass_matrix, opts.no_nlsq_warmstart);
  return c;
}

// The result files written by rank 0: NLSQ's when `fit` is set (and multistart.json with
// `multistart`), CMC's when `sampled` is set, and the plot inputs; fitted_data.h5 is
// written by all ranks afterwards (WriteFittedData).
void WriteResultFiles(const HomodyneCliOptions& opts, const config::Config& cfg,
                      const std::string& data_file, const PlotRequest& plots,
                      const nlsq::NlsqRunResult* fit, const nlsq::MultiStartSummary* multistart,
                      const cmc::CmcRunResult* sampled, const Logger& log) {
  const std::filesystem::path out(opts.output_dir);
  if (fit != nullptr) {
    nlsq::WriteNlsqResultFiles(out, fit->report);
    if (multistart != nullptr) {
      WriteFileAtomically(OutputFilePath(out, "nlsq/multistart.json"), multistart->ToJson());
    }
  }
  if (sampled != nullptr) cmc::WriteCmcResultFiles(opts.output_dir, *sampled);
  WritePlotInputs(out, plots, cfg, data_file, log);
}

// The closing summary on stdout (rank 0): the NLSQ and CMC results that ran, compared
// with the truth when the data file is synthetic.
void PrintSummary(const std::string& data_file, const std::string& output_dir,
                  const nlsq::NlsqRunResult* fit, const cmc::CmcRunResult* sampled) {
  std::string text = fit != nullptr ? FormatNlsqSummary(*fit) : std::string();
  if (sampled != nullptr) text += FormatCmcSummary(*sampled);
  try {
    const synth::SynthTruth truth = synth::ReadSyntheticTruth(data_file);
    if (fit != nullptr) text += FormatTruthComparison(*fit, truth);
    if (sampled != nullptr) text += FormatCmcTruthComparison(*sampled, truth);
  } catch (const Error&) {
    // Not a synthetic file: no truth to compare with.
  }
  text += fmt::format("\nresults in {}\n", output_dir);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

int RunFitBody(Environment& env, const HomodyneCliOptions& opts, RunState& state) {
  const Logger& log = env.logger();
  nlsq::FitMemoryOptions memory = RunCollectively(env.world(), [&] {
    nlsq::FitMemoryOptions m;
    m.strategy = nlsq::ParseFitStrategy(opts.strategy, "--strategy");
    if (!opts.memory_limit.empty()) {
      m.limit_bytes = nlsq::ParseMemorySize(opts.memory_limit, "--memory-limit");
    }
    return m;
  });
  PlotRequest plots = opts.plots;
  plots.simulated_options.overrides = opts.initial;
  config::Config cfg = RunCollectively(env.world(), [&] {
    if (!opts.config_given && !std::filesystem::exists(opts.config)) {
      ThrowBadInput("no config: pass --config FILE (homodyne-config --mode static writes one)",
                    opts.config, "--config");
    }
    config::ReadOptions ro;
    // A simulation alone reads no data.
    ro.require_data_file = opts.data_file.empty() && !(plots.PlotOnly() && !plots.experimental);
    plots.simulated_options.Validate();
    config::Config c = config::ReadConfigFile(opts.config, ro);
    if (opts.static_mode) c.analysis_mode = config::AnalysisMode::kStatic;
    if (opts.laminar_flow && c.analysis_mode != config::AnalysisMode::kLaminarFlow) {
      ThrowBadInput("--laminar-flow needs a laminar_flow config (7 physical parameters)",
                    opts.config, "analysis_mode");
    }
    return c;
  });
  state.config = cfg;
  for (const auto& note : cfg.notes) log.Debug("config: {}", note);
  log.Info("homodyne-hpc {}: {} of {} ({} rank(s))", Version(),
           plots.PlotOnly() ? std::string("plots")
                            : fmt::format("{} fit", config::ToString(opts.method)),
           opts.config, env.size());

  for (const auto& note : env.startup_notes()) log.Debug("library threads: {}", note);
  const PlacementPlan placement = PlanThreads(env.topology(), ChooseThreads(env, opts));
  for (const auto& w : placement.warnings) log.Warn("{}", w);
  const std::vector<RankPlacement> all_placements = GatherPlacements(env.world(), placement);
  state.placement = placement;
  state.placements = all_placements;
  const bool pin = !RanksShareCores(all_placements);
  if (!pin) {
    log.Warn(
        "ranks on the same host would share cores (were they started unbound?): compute "
        "threads are left unpinned; bind one rank per NUMA domain (homodyne-topology --show)");
  }
  const std::string data_file =
      opts.data_file.empty() ? cfg.experimental_data.DataFile() : opts.data_file;
  RunCollectively(env.world(), [&] {
    if (env.rank() == 0) CheckOutputDirectory(opts, data_file);
  });
  if (plots.PlotOnly()) return RunPlotsOnly(env, opts, plots, data_file, state);

  if (opts.dry_run) {
    memory.threads = static_cast<int>(placement.slots.size());
    RunDryRun(env.world(), cfg, opts.data_file, memory, log);
    return 0;
  }
  nlsq::NlsqRunOptions ro;
  ro.data_file = opts.data_file;
  ro.strategy = memory.strategy;
  ro.memory_limit_bytes = memory.limit_bytes;
  // The node's budget is shared by all of the job's ranks on it, also when multistart
  // fits on rank groups.
  ro.ranks_on_node = nlsq::QueryNodeMemory(env.world()).ranks_on_node;
  ro.initial = opts.initial;
  // Checkpoints and the graceful stop on SIGTERM/SIGUSR1 (exit 75).
  const checkpoint::InterruptHandlers interrupt_handlers;
  ro.checkpoints = RunCollectively(env.world(), [&] {
    std::map<std::string, std::string> overrides;
    if (opts.static_mode) overrides["static_mode"] = "true";
    if (opts.laminar_flow) overrides["laminar_flow"] = "true";
    for (const auto& [name, v] : opts.initial)
      overrides["initial." + name] = fmt::format("{:.17g}", v);
    return checkpoint::CheckpointSettings::FromConfig(cfg, opts.checkpoint_dir, opts.resume,
                                                      config::DescribeConfig(cfg, overrides));
  });
  ro.threads = static_cast<int>(placement.slots.size());
  // Thread 0 (this one, which also loads the data and so first-touches it) on slot 0, the
  // kernel's workers on the other slots.
  if (pin) {
    if (!PinCurrentThread(env.topology(), placement.slots.front())) {
      log.Warn("could not pin the main thread to PU {}", placement.slots.front().pu_os);
    }
    ro.worker_start = [&topology = env.topology(), slots = placement.slots](int index) {
      PinCurrentThread(topology, slots.at(static_cast<std::size_t>(index)));
    };
  }
  for (const auto& p : all_placements) {
    ro.placement.push_back(DescribeRankPlacement(p) + (pin ? "" : " (unpinned)"));
    log.Debug("placement: {}", ro.placement.back());
  }
  nlsq::NlsqRunResult result;
  nlsq::MultiStartSummary multistart;
  const bool use_multistart = cfg.optimization.nlsq.multi_start.enable;
  // --method cmc may skip the NLSQ run: no warm start, or one loaded from a file.
  const bool skip_nlsq = opts.method == config::FitMethod::kCmc &&
                         (opts.no_nlsq_warmstart || !opts.nlsq_result.empty());
  if (!opts.nlsq_result.empty()) {
    RunCollectively(env.world(), [&] {
      if (opts.method != config::FitMethod::kCmc) {
        ThrowBadInput("--nlsq-result is a warm start for --method cmc", {}, "--nlsq-result");
      }
      result = LoadNlsqWarmStart(opts.nlsq_result, cfg.analysis_mode);
    });
  }
  if (skip_nlsq) {
    // Nothing to run.
  } else if (use_multistart) {
    const auto ms = RunCollectively(env.world(), [&] {
      return nlsq::MultiStartOptions::FromConfig(cfg.optimization.nlsq.multi_start);
    });
    result = nlsq::RunMultiStartFit(env.world(), cfg, ro, ms, log, &multistart);
  } else {
    result = nlsq::RunNlsqFit(env.world(), cfg, ro, log);
  }
  // Rank 0 holds the complete result; every rank returns its verdict.
  int usable = env.rank() == 0 && (skip_nlsq || result.summary.IsUsable()) ? 1 : 0;
  MPI_Bcast(&usable, 1, MPI_INT, 0, env.world().get());
  const bool write_nlsq = opts.method != config::FitMethod::kCmc;

  std::optional<cmc::CmcRunResult> cmc_result;
  if (opts.method != config::FitMethod::kNlsq) {
    // The warm start on every rank (multistart leaves it complete on rank 0 only).
    for (auto* v : {&result.expanded, &result.expanded_uncertainty, &result.report.physical_values,
                    &result.report.physical_uncertainties}) {
      Broadcast(env.world(), *v);
    }
    cmc::CmcRunOptions co;
    co.data_file = opts.data_file;
    co.warm_start = opts.no_nlsq_warmstart ? nullptr : &result;
    co.threads = ro.threads;
    co.worker_start = ro.worker_start;
    co.num_warmup = opts.n_warmup;
    co.num_samples = opts.n_samples;
    co.num_chains = opts.n_chains;
    co.num_shards = opts.cmc_num_shards;
    co.dense_metric = opts.dense_mass_matrix ||
                      !config::ConfigHasValue(cfg, "optimization.mcmc.dense_mass_matrix") ||
                      config::ConfigBool(cfg, "optimization.mcmc.dense_mass_matrix");
    co.checkpoints = CmcCheckpointSettingsFor(cfg, *ro.checkpoints, opts);
    PhaseTimes::Scope t(result.phases, "cmc");
    cmc_result = cmc::RunCmcFit(env.world(), cfg, co, log);
  }

  // Outputs: rank 0 writes, all ranks agree on success.
  PhaseTimes phases = result.phases;
  RunCollectively(env.world(), [&] {
    PhaseTimes::Scope t(phases, "write_outputs");
    MaybeInjectFailure("output", env.rank());
    if (env.rank() != 0) return;
    WriteResultFiles(opts, cfg, data_file, plots, write_nlsq ? &result : nullptr,
                     use_multistart ? &multistart : nullptr, cmc_result ? &*cmc_result : nullptr,
                     log);
  });
  {
    // fitted_data.h5: all ranks together (collective, each rank its share of the angles).
    PhaseTimes::Scope t(phases, "write_outputs");
    // The compute threads' cores compress a one-rank file's chunks.
    const FittedDataThreads threads{ro.threads, ro.worker_start};
    const std::filesystem::path out(opts.output_dir);
    if (write_nlsq) {
      WriteFittedData(env.world(), OutputFilePath(out, "nlsq/fitted_data.h5"), cfg, data_file,
                      result, log, threads);
    }
    if (cmc_result) {
      WriteFittedData(env.world(), out / "cmc" / "fitted_data.h5", cfg, data_file,
                      PosteriorMeanModel(*cmc_result), log, kFittedDataMaxBytes, threads);
    }
  }
  state.phases = phases;
  RunReportInput report = BaseReport(opts, state);
  if (plots.Any()) {
    PhaseTimes::Scope t(report.phases, "plots");
    if (env.rank() == 0) report.plots = DrawPlots(opts.output_dir, plots, log);
    WaitWithoutSpinning(env.world());
  }
  report.exit_code = usable ? 0 : static_cast<int>(ExitCode::kInternalError);
  report.status = skip_nlsq
                      ? (cmc_result && cmc_result->all_converged ? "converged" : "not_converged")
                      : result.report.convergence_status;
  report.message = skip_nlsq ? "CMC without an NLSQ run" : result.summary.message;
  report.nlsq = skip_nlsq ? nullptr : &result;
  report.cmc = cmc_result ? &*cmc_result : nullptr;
  report.pinned = pin;
  if (env.rank() == 0) report.data = SummariseData(cfg, data_file, skip_nlsq ? nullptr : &result);
  RunCollectively(env.world(), [&] { WriteRunReport(env.world(), opts.output_dir, report); });
  if (env.rank() == 0 && !opts.quiet) {
    PrintSummary(data_file, opts.output_dir, skip_nlsq ? nullptr : &result,
                 cmc_result ? &*cmc_result : nullptr);
  }
  return usable ? 0 : static_cast<int>(ExitCode::kInternalError);
}

// A run that stops on an agreed error (not bad input: that leaves nothing behind) still
// writes its report, with the status and the message.
int RunFit(Environment& env, const HomodyneCliOptions& opts) {
  RunState state;
  try {
    return RunFitBody(env, opts, state);
  } catch (const Error& e) {
    if ((e.agreed() || env.size() == 1) && e.kind() != ErrorKind::kBadInput && state.config) {
      RunReportInput report = BaseReport(opts, state);
      report.exit_code = static_cast<int>(e.exit_code());
      report.status = e.kind() == ErrorKind::kCheckpointed ? "checkpointed" : "failed";
      report.message = e.what();
      try {
        WriteRunReport(env.world(), opts.output_dir, report);
      } catch (const std::exception& w) {
        env.logger().Warn("run_report.yaml not written: {}", w.what());
      }
    }
    throw;
  }
}

int RunHomodyne(Environment& env, const std::vector<std::string>& args) {
  if (batch::IsBatchCommand(args)) return batch::RunBatch(env, args);
  HomodyneCliOptions opts;
  if (auto code = ParseHomodyneOptions(env, args, opts)) return *code;
  env.logger().set_level(LogLevelFromVerbosity(opts.verbosity, opts.quiet));

  RunCollectively(env.world(), [&] { MaybeInjectFailure("startup", env.rank()); });

  if (opts.show_version) {
    const std::string report = FormatVersionReport(QueryLibraryVersions());
    if (env.rank() == 0) {
      std::fputs(report.c_str(), stdout);
      std::fflush(stdout);
    }
    env.logger().Debug("running on {} MPI rank(s), MPI thread level {}", env.size(),
                       env.thread_level());
    return 0;
  }
  return RunFit(env, opts);
}

}  // namespace

int HomodyneMain(int argc, char** argv) { return RunMpiApp(argc, argv, RunHomodyne); }

}  // namespace homodyne
