#include "app/homodyne_cli.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/autotune.h"
#include "app/batch.h"
#include "app/dry_run.h"
#include "app/fit_phases.h"
#include "app/homodyne_options.h"
#include "app/nlsq_report.h"
#include "app/plots.h"
#include "app/run_app.h"
#include "app/run_log.h"
#include "app/warm_start.h"
#include "checkpoint/interrupt.h"
#include "cmc/cmc_fit.h"
#include "config/config_bridge.h"
#include "config/config_digest.h"
#include "config/config_reader.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "core/library_versions.h"
#include "core/output_paths.h"
#include "core/placement.h"
#include "model/analysis_mode.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/xpcs_fit.h"
#include "outputs/results_yaml.h"
#include "outputs/run_report.h"
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

// --save-plots / --plot-*: rank 0 runs homodyne-plot while the other ranks wait.
void DrawRequestedPlots(Environment& env, const std::filesystem::path& out,
                        const PlotRequest& plots, RunReportInput& report) {
  if (!plots.Any()) return;
  PhaseTimes::Scope t(report.phases, "plots");
  if (env.rank() == 0) report.plots = DrawPlots(out, plots, env.logger());
  WaitWithoutSpinning(env.world());
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
  DrawRequestedPlots(env, out, plots, report);
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
  c.fatal_write_errors = run.fatal_write_errors;
  c.config_description =
      run.config_description + fmt::format("cli.cmc: {} {} {} {} {} {}\n", opts.n_samples,
                                           opts.n_warmup, opts.n_chains, opts.cmc_num_shards,
                                           opts.dense_mass_matrix, opts.no_nlsq_warmstart);
  return c;
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

// What the run reads before any work: the config with the command line's changes, the
// plots asked for, the memory options and the data file.
struct RunInputs {
  config::Config cfg;
  PlotRequest plots;
  nlsq::FitMemoryOptions memory;
  std::string data_file;  // --data-file, else the config's
};

// The config keys that homodyne's and xpcsjax's flags set (docs/migrating.md), by the
// name the checkpoint identity records them under.
std::map<std::string, std::string> FlagOverrides(const HomodyneCliOptions& opts) {
  std::map<std::string, std::string> out;
  if (opts.max_iterations) out["max_iterations"] = std::to_string(*opts.max_iterations);
  if (opts.tolerance) out["tolerance"] = fmt::format("{:.17g}", *opts.tolerance);
  if (opts.multistart) out["multistart"] = *opts.multistart ? "true" : "false";
  if (opts.multistart_n) out["multistart_n"] = std::to_string(*opts.multistart_n);
  if (!opts.phi.empty()) {
    std::string list;
    for (double a : opts.phi) list += fmt::format("{}{:.17g}", list.empty() ? "" : ",", a);
    out["phi"] = list;
  }
  return out;
}

void ApplyFlagOverrides(const HomodyneCliOptions& opts, config::Config& c) {
  config::NlsqOptions& n = c.optimization.nlsq;
  if (opts.max_iterations) n.max_iterations = *opts.max_iterations;
  if (opts.tolerance) n.tolerance = *opts.tolerance;
  if (opts.multistart_n) {
    n.multi_start.enable = true;
    n.multi_start.n_starts = *opts.multistart_n;
  }
  if (opts.multistart) n.multi_start.enable = *opts.multistart;
  // xpcsjax's --phi: the data's angles within 1 degree of each (its own tolerance).
  if (!opts.phi.empty()) {
    c.phi_filtering.enabled = true;
    c.phi_filtering.target_ranges.clear();
    for (double a : opts.phi) {
      config::AngleRange range;
      range.min_angle = a - 1.0;
      range.max_angle = a + 1.0;
      range.description = fmt::format("--phi {}", a);
      c.phi_filtering.target_ranges.push_back(range);
    }
  }
}

// Every rank reads the options and the config; bad input stops all of them before any work.
// Without --output-dir, the config's output.directory under output.base_directory (xpcsjax's
// rule; homodyne's default directory when the config names none).
std::string OutputDirectoryFor(const HomodyneCliOptions& opts, const config::Config& cfg) {
  if (opts.output_dir_given || cfg.output_directory.empty()) return opts.output_dir;
  return cfg.output_base_directory.empty()
             ? cfg.output_directory
             : (std::filesystem::path(cfg.output_base_directory) / cfg.output_directory).string();
}

void ResolveOutputDirectory(HomodyneCliOptions& opts, const config::Config& cfg) {
  opts.output_dir = OutputDirectoryFor(opts, cfg);
}

RunInputs ReadInputs(Environment& env, const HomodyneCliOptions& opts, RunState& state) {
  const Logger& log = env.logger();
  RunInputs in;
  in.memory = RunCollectively(env.world(), [&] {
    nlsq::FitMemoryOptions m;
    m.strategy = nlsq::ParseFitStrategy(opts.strategy, "--strategy");
    if (!opts.memory_limit.empty()) {
      m.limit_bytes = nlsq::ParseMemorySize(opts.memory_limit, "--memory-limit");
    }
    return m;
  });
  in.plots = opts.plots;
  in.plots.simulated_options.overrides = opts.initial;
  in.cfg = RunCollectively(env.world(), [&] {
    if (!opts.config_given && !std::filesystem::exists(opts.config)) {
      ThrowBadInput("no config: pass --config FILE (homodyne-config --mode static writes one)",
                    opts.config, "--config");
    }
    config::ReadOptions ro;
    // A simulation alone reads no data.
    ro.require_data_file =
        opts.data_file.empty() && !(in.plots.PlotOnly() && !in.plots.experimental);
    ro.strict = opts.strict;
    in.plots.simulated_options.Validate();
    config::Config c = config::ReadConfigFile(opts.config, ro);
    if (c.analysis_mode == config::AnalysisMode::kTwoComponent) {
      if (opts.static_mode) {
        ThrowBadInput(
            "--static-mode turns a laminar_flow config into a static one; this config "
            "is two_component",
            opts.config, "analysis_mode");
      }
    }
    ApplyFlagOverrides(opts, c);
    if (opts.static_mode) c.analysis_mode = config::AnalysisMode::kStatic;
    if (opts.laminar_flow && c.analysis_mode != config::AnalysisMode::kLaminarFlow) {
      ThrowBadInput(
          "--laminar-flow needs a laminar_flow config (7 physical parameters; also for --mode "
          "laminar_flow)",
          opts.config, "analysis_mode");
    }
    if (opts.require_two_component && c.analysis_mode != config::AnalysisMode::kTwoComponent) {
      ThrowBadInput(
          "--mode two_component needs a two_component config (14 physical parameters; "
          "homodyne-config --mode two_component writes one)",
          opts.config, "analysis_mode");
    }
    // homodyne's rule: laminar_flow's seven parameters span orders of magnitude, and a
    // config may ask that CMC never starts without an NLSQ answer.
    if (opts.method == config::FitMethod::kCmc && opts.no_nlsq_warmstart &&
        opts.nlsq_result.empty() && c.analysis_mode == config::AnalysisMode::kLaminarFlow &&
        c.optimization.cmc.validation.require_nlsq_warmstart) {
      ThrowBadInput(
          "laminar_flow CMC needs an NLSQ warm start when this key is true: drop "
          "--no-nlsq-warmstart, give --nlsq-result, or set the key to false",
          opts.config, config::keys::Key(config::keys::kCmcValidation, "require_nlsq_warmstart"));
    }
    return c;
  });
  state.config = in.cfg;
  const RunLogPlan log_plan = PlanRunLog(in.cfg.logging, opts.verbosity, opts.quiet,
                                         OutputDirectoryFor(opts, in.cfg), std::time(nullptr));
  RunCollectively(env.world(), [&] { OpenRunLog(env.logger(), log_plan, opts.config); });
  if (log_plan.file) log.Info("log file: {}", log_plan.file->string());
  if (!in.cfg.ignored_keys.empty()) log.Warn("{}", config::IgnoredKeysWarning(in.cfg));
  for (const auto& note : in.cfg.earlier_keys) log.Info("config: {}", note);
  for (const auto& w : config::UnusedSettingWarnings(in.cfg)) log.Warn("{}: {}", opts.config, w);
  for (const auto& note : opts.flag_notes) log.Info("{}", note);
  if (!opts.phi.empty()) {
    std::string list;
    for (double a : opts.phi) list += fmt::format("{}{:g}", list.empty() ? "" : ", ", a);
    log.Info(
        "--phi {}: fitting the data's angles within 1 degree of these (phi_filtering of the "
        "config replaced for this run)",
        list);
  }
  {
    // As in xpcsjax, an --initial-* flag of a parameter the mode does not have changes
    // nothing; here it says so.
    const auto& names = model::PhysicalParameterNames(in.cfg.analysis_mode);
    for (const auto& [name, value] : opts.initial) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        log.Info("--initial {} = {:g}: ignored: analysis_mode {} has no parameter {}", name, value,
                 config::ToString(in.cfg.analysis_mode), name);
      }
    }
  }
  for (const auto& note : in.cfg.notes) log.Debug("config: {}", note);
  if (!in.plots.PlotOnly()) log.Info("output: {}", config::OutputLayoutLine(in.cfg));
  log.Info("homodyne-hpc {}: {} of {} ({} rank(s))", Version(),
           in.plots.PlotOnly() ? std::string("plots")
                               : fmt::format("{} fit", config::ToString(opts.method)),
           opts.config, env.size());
  in.data_file = opts.data_file.empty() ? in.cfg.experimental_data.DataFile() : opts.data_file;
  return in;
}

// The compute threads of every rank and their cores.
struct ThreadPlan {
  PlacementPlan placement;         // this rank
  std::vector<RankPlacement> all;  // every rank
  bool pin = false;                // pin the threads to their cores
};

// Ranks of one host that would share cores (started unbound) leave their threads unpinned.
ThreadPlan PlanRunThreads(Environment& env, const HomodyneCliOptions& opts, RunState& state) {
  const Logger& log = env.logger();
  for (const auto& note : env.startup_notes()) log.Debug("library threads: {}", note);
  ThreadPlan plan;
  plan.placement = PlanThreads(env.topology(), ChooseThreads(env, opts));
  for (const auto& w : plan.placement.warnings) log.Warn("{}", w);
  plan.all = GatherPlacements(env.world(), plan.placement);
  state.placement = plan.placement;
  state.placements = plan.all;
  plan.pin = !RanksShareCores(plan.all);
  if (plan.pin && opts.threads <= 0 && env.rank() == 0) {
    const std::string note =
        IdleCoresNote(plan.all, plan.all.front().host, env.topology().counts().cores);
    if (!note.empty()) log.Warn("{}", note);
  }
  if (!plan.pin) {
    log.Warn(
        "ranks on the same host would share cores (were they started unbound?): compute "
        "threads are left unpinned; bind one rank per NUMA domain (homodyne-topology --show)");
  }
  return plan;
}

// Rank 0 checks the output directory for every rank (CheckOutputDirectory).
void CheckOutputs(Environment& env, const HomodyneCliOptions& opts, const std::string& data_file) {
  RunCollectively(env.world(), [&] {
    if (env.rank() == 0) CheckOutputDirectory(opts, data_file);
  });
}

// --dry-run: the memory plan of the fit, without fitting.
int RunDryRunOnly(Environment& env, const HomodyneCliOptions& opts, const RunInputs& in,
                  const ThreadPlan& threads) {
  nlsq::FitMemoryOptions memory = in.memory;
  memory.threads = static_cast<int>(threads.placement.slots.size());
  RunDryRun(env.world(), in.cfg, opts.data_file, memory, env.logger());
  return 0;
}

// The NLSQ fit's options: data path and memory, initial values, checkpoints, threads.
// Pins the calling thread, which loads the data and so first-touches it, to slot 0; the
// kernel's workers go to the other slots.
nlsq::NlsqRunOptions PrepareNlsq(Environment& env, const HomodyneCliOptions& opts,
                                 const RunInputs& in, const ThreadPlan& threads) {
  const Logger& log = env.logger();
  nlsq::NlsqRunOptions ro;
  ro.data_file = opts.data_file;
  ro.strategy = in.memory.strategy;
  ro.memory_limit_bytes = in.memory.limit_bytes;
  // The node's budget is shared by all of the job's ranks on it, also when multistart
  // fits on rank groups.
  ro.ranks_on_node = nlsq::QueryNodeMemory(env.world()).ranks_on_node;
  ro.initial = opts.initial;
  ro.checkpoints = RunCollectively(env.world(), [&] {
    std::map<std::string, std::string> overrides;
    if (opts.static_mode) overrides["static_mode"] = "true";
    if (opts.laminar_flow) overrides["laminar_flow"] = "true";
    for (const auto& [name, v] : opts.initial)
      overrides["initial." + name] = fmt::format("{:.17g}", v);
    for (const auto& [name, value] : FlagOverrides(opts)) overrides[name] = value;
    return checkpoint::CheckpointSettings::FromConfig(in.cfg, opts.checkpoint_dir, opts.resume,
                                                      config::DescribeConfig(in.cfg, overrides),
                                                      opts.output_dir);
  });
  const auto& slots = threads.placement.slots;
  ro.threads = static_cast<int>(slots.size());
  if (threads.pin) {
    if (!PinCurrentThread(env.topology(), slots.front())) {
      log.Warn("could not pin the main thread to PU {}", slots.front().pu_os);
    }
    ro.worker_start = [&topology = env.topology(), slots](int index) {
      PinCurrentThread(topology, slots.at(static_cast<std::size_t>(index)));
    };
    // The read-ahead is created by thread 0 and would share its PU: any core of the rank.
    ro.read_ahead_start = [&topology = env.topology(), cpuset = threads.placement.cpuset] {
      PinCurrentThreadToSet(topology, cpuset);
    };
  }
  for (const auto& p : threads.all) {
    ro.placement.push_back(DescribeRankPlacement(p) + (threads.pin ? "" : " (unpinned)"));
    log.Debug("placement: {}", ro.placement.back());
  }
  return ro;
}

// The NLSQ fit, except that --method cmc may go without one: no warm start
// (--no-nlsq-warmstart), or one loaded from an earlier result (--nlsq-result).
NlsqOutcome FitNlsqOrWarmStart(const FitScope& scope, const HomodyneCliOptions& opts,
                               const nlsq::NlsqRunOptions& ro) {
  const bool cmc_only = opts.method == config::FitMethod::kCmc;
  if (opts.nlsq_result.empty() && !(cmc_only && opts.no_nlsq_warmstart)) {
    return RunNlsqPhase(scope, ro);
  }
  NlsqOutcome warm;
  warm.ran = false;
  warm.usable = true;
  warm.converged = true;  // a loaded result is not refitted
  if (!opts.nlsq_result.empty()) {
    RunCollectively(scope.comm, [&] {
      if (!cmc_only) {
        ThrowBadInput("--nlsq-result is a warm start for --method cmc", {}, "--nlsq-result");
      }
      warm.result = LoadNlsqWarmStart(opts.nlsq_result, scope.cfg.analysis_mode);
    });
  }
  return warm;
}

// CMC's options: the command line's sampling settings (< 0: the config's), the NLSQ fit's
// threads and checkpoint settings.
cmc::CmcRunOptions CmcOptionsFor(const HomodyneCliOptions& opts, const config::Config& cfg,
                                 const nlsq::NlsqRunOptions& ro) {
  cmc::CmcRunOptions co;
  co.data_file = opts.data_file;
  co.threads = ro.threads;
  co.worker_start = ro.worker_start;
  co.num_warmup = opts.n_warmup;
  co.num_samples = opts.n_samples;
  co.num_chains = opts.n_chains;
  co.num_shards = opts.cmc_num_shards;
  co.dense_metric = opts.dense_mass_matrix || ConfigDenseMetric(cfg);
  co.checkpoints = CmcCheckpointSettingsFor(cfg, *ro.checkpoints, opts);
  return co;
}

// run_report.yaml (all ranks) and the closing summary (rank 0). Returns the exit code
// (NlsqExitCode; with --method cmc the NLSQ warm start's convergence does not count).
int ReportFit(Environment& env, const HomodyneCliOptions& opts, const RunInputs& in,
              const NlsqOutcome& nlsq, const cmc::CmcRunResult* cmc, bool pinned,
              RunReportInput report) {
  const nlsq::NlsqRunResult* fit = nlsq.ran ? &nlsq.result : nullptr;
  const int nlsq_code = NlsqExitCode(nlsq);
  const int exit_code = opts.method == config::FitMethod::kCmc &&
                                (nlsq_code == static_cast<int>(ExitCode::kNotConverged) ||
                                 nlsq_code == static_cast<int>(ExitCode::kMisfit))
                            ? 0
                            : nlsq_code;
  report.exit_code = exit_code;
  if (fit != nullptr) {
    report.status = nlsq.converged && nlsq.misfit ? "misfit" : fit->report.convergence_status;
    report.message =
        nlsq.converged && nlsq.misfit
            ? fmt::format("converged to a misfit: {}", fmt::join(fit->report.misfit_reasons, "; "))
            : fit->summary.message;
  } else {
    report.status = cmc != nullptr && cmc->all_converged ? "converged" : "not_converged";
    report.message = "CMC without an NLSQ run";
  }
  report.nlsq = fit;
  report.cmc = cmc;
  report.pinned = pinned;
  if (env.rank() == 0) report.data = SummariseData(in.cfg, in.data_file, fit);
  RunCollectively(env.world(), [&] { WriteRunReport(env.world(), opts.output_dir, report); });
  if (env.rank() == 0 && !opts.quiet) PrintSummary(in.data_file, opts.output_dir, fit, cmc);
  return exit_code;
}

// The phases that are not fitting work (fit, global search, sampling, plots asked for)
// join the start-up items as fixed costs, the known ones in the order a run meets them;
// launch and init are itemised already.
void AddPhaseFixedCosts(const PhaseTimes& phases, FixedCosts& costs) {
  static const std::vector<std::string> kOrder = {"config",
                                                  "load",
                                                  "setup",
                                                  "initial_scaling",
                                                  "noise_level",
                                                  "write_outputs",
                                                  "write_fitted_data",
                                                  "write_fitted_data_npz"};
  static const std::set<std::string> kNotFixed = {"launch", "init", "fit", "cmaes", "cmc", "plots"};
  const auto& seconds = phases.seconds();
  for (const auto& name : kOrder) {
    if (auto it = seconds.find(name); it != seconds.end()) costs.Add(name, it->second);
  }
  for (const auto& [name, s] : seconds) {
    const bool listed = std::find(kOrder.begin(), kOrder.end(), name) != kOrder.end();
    if (!listed && kNotFixed.count(name) == 0) costs.Add(name, s);
  }
}

// The run, phase by phase. Each phase is collective: an error stops every rank in it.
int RunFitBody(Environment& env, HomodyneCliOptions& opts, RunState& state) {
  // The time before the first phase, so that the report accounts for the whole job.
  state.phases.Add("launch", env.startup_times().launch_seconds);
  state.phases.Add("init", env.startup_times().init_seconds);
  if (!env.mpi_transport_note().empty()) env.logger().Debug("{}", env.mpi_transport_note());
  env.logger().Debug("PETSc {}", env.petsc_initialized()
                                     ? "started with MPI (PETSc options were given)"
                                     : "not loaded (a TAO local method loads it)");
  std::optional<PhaseTimes::Scope> config_phase(std::in_place, state.phases, "config");
  const RunInputs in = ReadInputs(env, opts, state);
  ResolveOutputDirectory(opts, in.cfg);
  const ThreadPlan threads = PlanRunThreads(env, opts, state);
  CheckOutputs(env, opts, in.data_file);
  if (in.plots.PlotOnly()) return RunPlotsOnly(env, opts, in.plots, in.data_file, state);
  if (opts.dry_run) return RunDryRunOnly(env, opts, in, threads);

  // Checkpoints and the graceful stop on SIGTERM/SIGUSR1 (exit 75) until the run ends.
  const checkpoint::InterruptHandlers interrupt_handlers;
  const nlsq::NlsqRunOptions ro = PrepareNlsq(env, opts, in, threads);
  config_phase.reset();
  const FitScope scope{env.world(),     env.rank(),  in.cfg,      in.data_file,
                       opts.output_dir, opts.method, env.logger()};
  NlsqOutcome nlsq = FitNlsqOrWarmStart(scope, opts, ro);
  std::optional<cmc::CmcRunResult> cmc;
  if (opts.method != config::FitMethod::kNlsq) {
    cmc = RunCmcPhase(scope, CmcOptionsFor(opts, in.cfg, ro), !opts.no_nlsq_warmstart, nlsq);
  }
  const cmc::CmcRunResult* sampled = cmc ? &*cmc : nullptr;
  PhaseTimes phases =
      WriteFitOutputs(scope, nlsq, sampled, in.plots, {ro.threads, ro.worker_start});
  if (opts.output_format == "yaml") {
    RunCollectively(env.world(), [&] {
      if (env.rank() == 0) WriteHomodyneResultsYaml(opts.output_dir);
    });
  } else if (opts.output_format == "npz") {
    RunCollectively(env.world(), [&] {
      if (env.rank() == 0) WriteHomodyneResultsNpz(opts.output_dir);
    });
  }
  for (const auto& [name, seconds] : state.phases.seconds()) phases.Add(name, seconds);
  state.phases = phases;

  AddPhaseFixedCosts(state.phases, env.fixed_costs());

  RunReportInput report = BaseReport(opts, state);
  report.fixed_costs = env.fixed_costs().items;
  DrawRequestedPlots(env, opts.output_dir, in.plots, report);
  const auto report_start = std::chrono::steady_clock::now();
  const int code = ReportFit(env, opts, in, nlsq, sampled, threads.pin, report);
  env.fixed_costs().Add(
      "run_report",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - report_start).count());
  return code;
}

// A run that stops on an agreed error (not bad input: that leaves nothing behind) still
// writes its report, with the status and the message.
int RunFit(Environment& env, const HomodyneCliOptions& given) {
  RunState state;
  HomodyneCliOptions opts = given;  // its output directory is resolved with the config
  try {
    return RunFitBody(env, opts, state);
  } catch (const Error& e) {
    if ((IsAgreed(e) || env.size() == 1) && e.kind() != ErrorKind::kBadInput && state.config) {
      RunReportInput report = BaseReport(opts, state);
      report.exit_code = static_cast<int>(ExitCodeOf(e));
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
