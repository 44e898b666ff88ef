#include "app/homodyne_options.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include <fmt/format.h>

#include "app/command_line.h"
#include "config/key_paths.h"
#include "core/errors.h"

namespace homodyne {

namespace {

// homodyne's and xpcsjax's flags that are not ours by name: config overrides with their
// meaning, and flags with no meaning here, accepted with a one-line note
// (docs/migrating.md).
void AddMigrationFlags(CLI::App& app, HomodyneCliOptions& opts) {
  app.add_option("--max-iterations", opts.max_iterations,
                 "homodyne: optimization.nlsq.max_iterations for this run")
      ->check(CLI::PositiveNumber);
  app.add_option("--tolerance", opts.tolerance, "homodyne: optimization.nlsq.tolerance (ftol)")
      ->check(CLI::PositiveNumber);
  app.add_option(
         "--output-format", opts.output_format,
         "homodyne: homodyne_results file format (json; yaml or npz adds homodyne_results.yaml or "
         ".npz beside the JSON file)")
      ->check(CLI::IsMember({"json", "yaml", "npz"}))
      ->capture_default_str();
  auto* on = app.add_flag_callback(
      "--multistart", [&opts] { opts.multistart = true; },
      "xpcsjax: optimization.nlsq.multi_start.enable: true");
  auto* off = app.add_flag_callback(
      "--no-multistart", [&opts] { opts.multistart = false; },
      "xpcsjax: optimization.nlsq.multi_start.enable: false");
  on->excludes(off);
  app.add_option("--multistart-n", opts.multistart_n,
                 "xpcsjax: optimization.nlsq.multi_start.n_starts (and enables it)")
      ->check(CLI::PositiveNumber);
  app.add_option("--phi", opts.phi,
                 "xpcsjax: fit only the data's angles within 1 degree of these (replaces "
                 "phi_filtering for this run)")
      ->expected(1, -1);
  auto* plot = app.add_flag("--plot", opts.plots.save_plots, "xpcsjax: same as --save-plots");
  auto* no_plot = app.add_flag_callback(
      "--no-plot", [] {}, "xpcsjax: no figures (the default here)");
  plot->excludes(no_plot);
  const auto note = [&app, &opts](const char* flag, bool takes_value, const char* why) {
    const auto record = [&opts, flag, why](const std::string& value) {
      opts.flag_notes.push_back(
          fmt::format("{}{}{}: {}", flag, value.empty() ? "" : " ", value, why));
    };
    if (takes_value) {
      app.add_option_function<std::string>(flag, record, fmt::format("homodyne: {}", why));
    } else {
      app.add_flag_callback(
          flag, [record] { record(""); }, fmt::format("homodyne: {}", why));
    }
  };
  note("--no-jit", false, "ignored: there is no JIT here, the kernels are compiled C++");
  note("--cmc-backend", true, "ignored: CMC always runs its own NUTS over MPI ranks and threads");
  note("--plotting-backend", true, "ignored: figures are drawn by homodyne-plot (matplotlib)");
  note("--parallel-plots", false, "ignored: homodyne-plot draws the figures in one process");
}

}  // namespace

// Parses on every rank (the result is identical everywhere); rank 0 prints help and
// parse errors. Returns an exit code when the program should stop right away.
namespace {

// What the parse fills beside HomodyneCliOptions: values that are checked or translated
// after CLI11 has run, and the options whose presence is asked for.
struct ParsedFlags {
  std::string method;
  std::string mode;
  CLI::Option* config = nullptr;
  CLI::Option* output_dir = nullptr;
  std::map<std::string, double> initial_values;  // nodes stay put: CLI11 writes into them
  std::vector<std::pair<CLI::Option*, std::string>> initial_options;
};

// The run: config, method, output, data file, analysis mode, threads.
void AddRunOptions(CLI::App& app, HomodyneCliOptions& opts, ParsedFlags& f) {
  app.add_flag("--version", opts.show_version,
               "print the versions of homodyne-hpc, MPI, PETSc, HDF5, yaml-cpp and hwloc");
  f.config =
      app.add_option("--config,-c", opts.config, "homodyne YAML config")->capture_default_str();
  app.add_flag("--strict", opts.strict,
               "refuse a config with unknown keys (default: warn and ignore them, as homodyne "
               "and xpcsjax do)");
  f.method = std::string(config::ToString(opts.method));
  app.add_option("--method", f.method, "nlsq, cmc (NLSQ warm start, then Consensus MC) or both")
      ->check(CLI::IsMember({"nlsq", "cmc", "both"}))
      ->capture_default_str();
  f.output_dir = app.add_option("--output-dir,-o,--output", opts.output_dir,
                                "root directory of all outputs (--output: xpcsjax's name; "
                                "default: the config's output.base_directory/directory)")
                     ->capture_default_str();
  app.add_option("--data-file", opts.data_file, "data file (overrides the config's path)");
  app.add_option("--mode", f.mode,
                 "xpcsjax: static_isotropic/static_anisotropic/static = --static-mode, "
                 "laminar_flow = --laminar-flow, two_component: the config must be one")
      ->check(CLI::IsMember(
          {"static", "static_isotropic", "static_anisotropic", "laminar_flow", "two_component"}));
  auto* sm = app.add_flag("--static-mode", opts.static_mode, "force analysis_mode static");
  auto* lf = app.add_flag("--laminar-flow", opts.laminar_flow, "force analysis_mode laminar_flow");
  sm->excludes(lf);
  app.add_option("--threads", opts.threads,
                 "compute threads per rank (default: the autotune cache of homodyne-topology "
                 "--autotune, else one per core the rank is bound to)")
      ->check(IntegerAtLeast(0));
  app.add_flag("--no-autotune-cache", opts.no_autotune_cache,
               "ignore the settings cached by homodyne-topology --autotune");
}

// --initial-<name>: homodyne's spellings, with xpcsjax's beside them, and xpcsjax's
// two-component flags.
void AddInitialValueOptions(CLI::App& app, ParsedFlags& f) {
  const std::pair<const char*, const char*> initial_flags[] = {
      {"--initial-d0,--initial-D0", "D0"},
      {"--initial-alpha", "alpha"},
      {"--initial-d-offset,--initial-D-offset", "D_offset"},
      {"--initial-gamma-dot-t0", "gamma_dot_t0"},
      {"--initial-beta", "beta"},
      {"--initial-gamma-dot-offset,--initial-gamma-dot-t-offset", "gamma_dot_t_offset"},
      {"--initial-phi0", "phi0"},
      {"--initial-v0", "v0"},
      {"--initial-v-beta", "v_beta"},
      {"--initial-v-offset", "v_offset"},
      {"--initial-f0", "f0"},
      {"--initial-f1", "f1"},
      {"--initial-f2", "f2"},
      {"--initial-f3", "f3"}};
  for (auto [flag, name] : initial_flags) {
    auto* o = app.add_option(
        flag, f.initial_values[name],
        fmt::format("initial {}{}", name, std::string(name) == "phi0" ? " (degrees)" : ""));
    f.initial_options.emplace_back(o, name);
  }
}

// CMC's sampler, the NLSQ data path and the memory budget.
void AddSamplingAndMemoryOptions(CLI::App& app, HomodyneCliOptions& opts) {
  app.add_option("--n-samples", opts.n_samples, "CMC: draws per chain (per_shard_mcmc)")
      ->check(PositiveCount());
  app.add_option("--n-warmup", opts.n_warmup, "CMC: warmup iterations per chain")
      ->check(IntegerAtLeast(0));
  app.add_option("--n-chains", opts.n_chains, "CMC: chains per shard")->check(PositiveCount());
  app.add_option("--cmc-num-shards", opts.cmc_num_shards, "CMC: number of shards")
      ->check(PositiveCount());
  app.add_flag("--no-nlsq-warmstart", opts.no_nlsq_warmstart, "CMC: skip the NLSQ warm start");
  app.add_flag("--dense-mass-matrix", opts.dense_mass_matrix, "CMC: dense NUTS metric");
  app.add_option("--nlsq-result", opts.nlsq_result,
                 "CMC: warm start from an earlier NLSQ result (directory or parameters.json)");
  app.add_option("--strategy", opts.strategy,
                 "NLSQ data path: auto (by the memory budget), in-core or streaming")
      ->capture_default_str();
  app.add_option("--memory-limit", opts.memory_limit,
                 fmt::format("memory budget per rank, e.g. 2G or 512M (default: {} of the node's "
                             "RAM shared by its ranks)",
                             config::keys::Key(config::keys::kNlsq, "memory_fraction")));
  app.add_flag("--dry-run", opts.dry_run,
               "print the memory estimate, budget, strategy and partition per rank, then exit");
}

// Plots, checkpoints, the migration flags, verbosity and the help's footer.
void AddOutputOptions(CLI::App& app, HomodyneCliOptions& opts) {
  app.add_flag("--save-plots", opts.plots.save_plots,
               "figures of the results with homodyne-plot (c2 heatmaps, CMC diagnostics)");
  app.add_flag("--plot-experimental-data", opts.plots.experimental,
               "plots/ of the selected data (without --save-plots: no fit)");
  app.add_flag("--plot-simulated-data", opts.plots.simulated,
               "plots/ of the model at the config's initial parameters (without --save-plots: "
               "no fit, no data loading)");
  app.add_option("--plot-format", opts.plots.format, "figure format")
      ->check(CLI::IsMember({"png", "pdf"}))
      ->capture_default_str();
  app.add_option("--contrast", opts.plots.simulated_options.contrast, "simulated-data plots")
      ->capture_default_str();
  app.add_option("--offset", opts.plots.simulated_options.offset, "simulated-data plots")
      ->capture_default_str();
  app.add_option("--phi-angles", opts.plots.simulated_options.phi_deg,
                 "simulated-data plots: angles in degrees (default: the data's)")
      ->delimiter(',');
  app.add_flag("--resume", opts.resume,
               "continue from the newest valid checkpoint (optimization.streaming.checkpoint_dir)");
  app.add_option("--checkpoint-dir", opts.checkpoint_dir,
                 "write checkpoints to DIR (enables them; overrides the config)");
  AddMigrationFlags(app, opts);
  app.add_flag("-v,--verbose", opts.verbosity, "more output (repeat for more)");
  app.add_flag("-q,--quiet", opts.quiet, "errors only");
  app.footer(
      "PETSc options (-tao_monitor, -tao_converged_reason, -tao_max_it 50, -log_view, ...)\n"
      "reach PETSc and every local solver, the default one too (docs/hpc-guide.md).\n"
      "Exit codes (docs/errors.md): 0 ok, 1 internal error, 2 bad input,\n"
      "4 not converged (stalled or at max_iterations; results written and labelled),\n"
      "5 misfit (converged far above the data's noise floor; results written and labelled),\n"
      "75 checkpointed (resume with --resume). homodyne's and xpcsjax's flags:\n"
      "docs/migrating.md.\n"
      "Batch mode: homodyne batch BATCH.yaml (or --batch BATCH.yaml) [--group-size N]\n"
      "[--threads N] [--output-dir DIR]: many fits in one job (homodyne batch --help,\n"
      "docs/batch.md; exit 3 when some tasks failed).");
}

// Unknown arguments are named in the order given, with the page that maps homodyne's and
// xpcsjax's flags (CLI11's own message lists them reversed): the bad-input exit code.
std::optional<int> RefuseExtras(const Environment& env, const CLI::App& app) {
  const std::vector<std::string> extra = app.remaining();
  if (extra.empty()) return std::nullopt;
  if (env.rank() == 0) {
    std::string list;
    for (const auto& a : extra) list += (list.empty() ? "" : " ") + a;
    std::fprintf(stderr,
                 "error: unknown argument(s): %s\nRun with --help for the list of options; "
                 "docs/migrating.md maps homodyne's and xpcsjax's flags.\n",
                 list.c_str());
  }
  return static_cast<int>(ExitCode::kBadInput);
}

// The parsed flags into `opts`: presence, the method, the command line, initial values and
// the analysis mode (a contradiction of --mode and --static-mode/--laminar-flow is bad input).
std::optional<int> ApplyParsedFlags(const Environment& env, const std::vector<std::string>& args,
                                    const ParsedFlags& f, HomodyneCliOptions& opts) {
  opts.config_given = f.config->count() > 0;
  opts.output_dir_given = f.output_dir->count() > 0;
  opts.method = config::ParseFitMethod(f.method, "--method");  // CLI11 accepted it
  for (const auto& a : args) opts.command_line += (opts.command_line.empty() ? "" : " ") + a;
  for (const auto& [o, name] : f.initial_options) {
    if (o->count() > 0) opts.initial[name] = f.initial_values.at(name);
  }
  const std::string& mode = f.mode;
  if (mode.rfind("static", 0) == 0) opts.static_mode = true;
  if (mode == "laminar_flow") opts.laminar_flow = true;
  if (mode == "two_component") opts.require_two_component = true;
  if (opts.static_mode && opts.laminar_flow) {
    if (env.rank() == 0) {
      std::fprintf(stderr, "error: --mode %s contradicts --%s\n", mode.c_str(),
                   mode == "laminar_flow" ? "static-mode" : "laminar-flow");
    }
    return static_cast<int>(ExitCode::kBadInput);
  }
  if (!mode.empty())
    opts.flag_notes.push_back(fmt::format("--mode {}: analysis mode forced", mode));
  return std::nullopt;
}

}  // namespace

std::optional<int> ParseHomodyneOptions(Environment& env, const std::vector<std::string>& args,
                                        HomodyneCliOptions& opts) {
  CLI::App app{"homodyne-hpc: fit XPCS two-time correlation data with the homodyne model",
               "homodyne"};
  ParsedFlags flags;
  AddRunOptions(app, opts, flags);
  AddInitialValueOptions(app, flags);
  AddSamplingAndMemoryOptions(app, opts);
  AddOutputOptions(app, opts);
  app.allow_extras();
  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 wants reverse order
  if (const auto code = TryParseCommandLine(
          app, [&] { app.parse(reversed); }, env.rank() == 0)) {
    return code;
  }
  if (const auto code = RefuseExtras(env, app)) return code;
  return ApplyParsedFlags(env, args, flags, opts);
}

}  // namespace homodyne
