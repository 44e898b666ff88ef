// Key table: logging, plotting, output, performance, loader extras and the sections that
// homodyne documents but does not read on its CLI path (spec §3).
#include "key_table_builder.h"

namespace homodyne::config::detail {
namespace {
using T = KeyType;
constexpr auto kAcc = KeyStatus::kAccepted;
constexpr auto kUse = KeyStatus::kUsed;

Rule LogLevels() { return OneOf(ChoiceNames<LogLevel>(), true); }

void AddLogging(std::vector<KeySpec>& t) {
  const FieldsOf f([](auto& c) -> auto& { return c.logging; });
  const KeyAdder l(t, "logging");
  l.Section("", kUse, "Log output", kNullable);
  l.Used("enabled", T::kBool, "true", NoRule(),
         "false: the console shows warnings and errors only, and no log file is written",
         f(&LoggingOptions::enabled));
  l.Used("level", T::kString, "INFO", LogLevels(),
         "Console level when console.level is not set (TRACE, DEBUG, INFO, WARNING, ERROR; "
         "WARN and CRITICAL are read as WARNING and ERROR)",
         f(&LoggingOptions::level));
  l.Section("console", kUse, "Console log", kNullable);
  l.Used("console.enabled", T::kBool, "true", NoRule(), "false: the console shows errors only",
         f(&LoggingOptions::console_enabled));
  l.Used("console.level", T::kString, "null", LogLevels(),
         "Console level (null: level); -v, -vv and --quiet on the command line take "
         "precedence",
         f(&LoggingOptions::console_level), kNullable);
  l.Acc("console.format", T::kString, "detailed", NoRule(), "Line format");
  l.Acc("console.colors", T::kBool, "true", NoRule(), "Coloured output");
  l.Acc("console.show_progress", T::kBool, "true", NoRule(), "Progress lines");
  l.Section("file", kUse, "Log file", kNullable);
  l.Used("file.enabled", T::kBool, "false", NoRule(),
         "Write rank 0's log, lines stamped with time and level, to a file as well",
         f(&LoggingOptions::file_enabled));
  l.Used("file.level", T::kString, "DEBUG", LogLevels(), "File level",
         f(&LoggingOptions::file_level));
  l.Used("file.path", T::kString, "null", NoRule(),
         "Log folder, relative to the working directory (null: logs/ in the output "
         "directory; created if missing)",
         f(&LoggingOptions::file_path), kNullable);
  l.Used("file.filename", T::kString, "homodyne_analysis.log", NoRule(),
         "Log file name; the run's start time is added before the extension "
         "(homodyne_analysis_20261130_004102.log), or replaces {run_id} where the name has it",
         f(&LoggingOptions::file_name));
  l.Acc("file.max_size_mb", T::kFloat, "10", Positive(), "Rotation size (MB)");
  l.Acc("file.backup_count", T::kInt, "5", NonNegative(), "Rotated files kept");
  l.Section("modules", kAcc, "Per-logger levels (logger name: level)", kNullable);
  l.Acc("modules.*", T::kString, "", LogLevels(), "Level of one named logger");
}

void AddPlottingAndOutput(std::vector<KeySpec>& t) {
  const KeyAdder p(t, "plotting");
  p.Section("", kAcc, "Plot settings (homodyne reads output.plots instead)", kOpen | kNullable);
  p.Acc("save_plots", T::kBool, "false", NoRule(), "Save plots");
  p.Acc("show_plots", T::kBool, "false", NoRule(), "Show plots");
  p.Acc("format", T::kString, "png", NoRule(), "Image format");
  p.Acc("dpi", T::kInt, "300", AtLeast(1), "Resolution");
  p.Acc("style", T::kString, "", NoRule(), "Plot style", kNullable);
  p.Acc("preview_mode", T::kBool, "false", NoRule(), "Fast preview rendering");
  p.Acc("fit_surface", T::kString, "solver", OneOf({"solver", "posthoc"}), "Fit surface source");
  p.Acc("color_scale", T::kAnyMapping, "", NoRule(), "Colour scale settings", kNullable);
  p.Acc("datashader", T::kAnyMapping, "", NoRule(), "Datashader canvas settings", kNullable);
  p.Acc("matplotlib", T::kAnyMapping, "", NoRule(), "Matplotlib settings", kNullable);
  p.Acc("correlation_function", T::kAny, "", NoRule(),
        "Correlation plot: settings, or true/false (xpcsjax)", kNullable);
  p.Acc("fit_quality", T::kAny, "", NoRule(), "Fit-quality plot: settings, or true/false (xpcsjax)",
        kNullable);

  const FieldsOf top([](auto& c) -> auto& { return c; });
  const KeyAdder o(t, "output");
  o.Section("", kUse, "Output locations (the --output-dir flag overrides)", kNullable);
  o.Used("directory", T::kString, "./homodyne_results", NoRule(),
         "Root of all outputs (the --output-dir flag overrides it)",
         top(&Config::output_directory));
  o.Used("base_directory", T::kString, "", NoRule(),
         "Parent of output.directory (xpcsjax): the results go to base_directory/directory",
         top(&Config::output_base_directory), kNullable);
  o.Used("layout", T::kString, "auto", OneOf(ChoiceNames<OutputLayout>()),
         "Result files: homodyne's set, or xpcsjax's added (nlsq_result.json/.npz and its flat "
         "parameters.json, analysis_results_nlsq.json, convergence_metrics.json in the output "
         "directory, docs/outputs.md); auto: xpcsjax's for an xpcsjax config (two_component, "
         "or a key only xpcsjax writes, docs/migrating.md), homodyne's otherwise",
         top(&Config::output_layout));
  o.Section("formats", kAcc, "Result formats (only JSON/NPZ/YAML are written)", kNullable);
  o.Acc("formats.hdf5", T::kBool, "", NoRule(), "HDF5 results");
  o.Acc("formats.json", T::kBool, "", NoRule(), "JSON results");
  o.Acc("formats.csv", T::kBool, "", NoRule(), "CSV results");
  o.Acc("formats.yaml", T::kBool, "", NoRule(), "YAML results (xpcsjax)");
  o.Acc("formats.npz", T::kBool, "", NoRule(), "NPZ results (xpcsjax)");
  o.Acc("include_diagnostics", T::kBool, "true", NoRule(),
        "xpcsjax: diagnostic blocks in its outputs; not used: the fit's diagnostics are always "
        "written (docs/outputs.md)");
  o.Acc("create_subdirs", T::kBool, "true", NoRule(), "Create method subfolders");
  o.Acc("timestamp_dirs", T::kBool, "false", NoRule(), "Timestamped folders");
  o.Used("compress_hdf5", T::kBool, "false", NoRule(),
         "Compress the large arrays of the HDF5 result files (shuffle + deflate; 10x the "
         "write time for 20-60 % smaller files, docs/outputs.md) and of fitted_data.npz "
         "(deflate; false: stored, as numpy.savez)",
         top(&Config::compress_hdf5));
  o.Used("fitted_data", T::kString, "model", OneOf(ChoiceNames<FittedDataLevel>()),
         "Arrays of fitted_data.h5: full (homodyne's six N x N arrays per angle), model (c2_exp "
         "and c2_theoretical_raw; the others are one multiply-add away) or none",
         top(&Config::fitted_data));
  o.Used("compression_level", T::kInt, "4", InRange(0, 9),
         "Deflate level of those arrays (1 fastest … 9 smallest; 0 = uncompressed)",
         top(&Config::compression_level));
  o.Section("plots", kAcc, "Heatmap settings read by homodyne's plotting code", kNullable);
  o.Acc("plots.preview_mode", T::kBool, "false", NoRule(), "Fast preview rendering");
  o.Acc("plots.fit_surface", T::kString, "solver", OneOf({"solver", "posthoc"}),
        "Fit surface from the solver or recomputed");
  o.Section("plots.color_scale", kAcc, "Colour scale", kNullable);
  o.Acc("plots.color_scale.mode", T::kString, "percentile", NoRule(), "Scaling mode");
  o.Acc("plots.color_scale.percentile_min", T::kFloat, "1", InRange(0, 100), "Lower percentile");
  o.Acc("plots.color_scale.percentile_max", T::kFloat, "99", InRange(0, 100), "Upper percentile");
  o.Acc("plots.color_scale.fixed_min", T::kFloat, "null", NoRule(), "Fixed lower limit", kNullable);
  o.Acc("plots.color_scale.fixed_max", T::kFloat, "null", NoRule(), "Fixed upper limit", kNullable);
  o.Section("plots.datashader", kAcc, "Datashader canvas", kNullable);
  o.Acc("plots.datashader.canvas_width", T::kInt, "", AtLeast(1), "Canvas width");
  o.Acc("plots.datashader.canvas_height", T::kInt, "", AtLeast(1), "Canvas height");
}

void AddPerformance(std::vector<KeySpec>& t) {
  const KeyAdder p(t, "performance");
  p.Section("", kAcc, "Resource hints; other loader flags are accepted", kOpen | kNullable);
  p.Acc("strategy_override", T::kString, "null", NoRule(), "Force a fit strategy", kNullable);
  p.Acc("memory_limit_gb", T::kFloat, "null", Positive(), "Memory limit (GB)", kNullable);
  p.Acc("enable_progress", T::kBool, "true", NoRule(), "Progress output");
  p.Acc("memory_optimization", T::kAnyMapping, "", NoRule(), "Memory options", kNullable);
  p.Section("computation", kAcc, "Computation hints", kNullable);
  p.Acc("computation.enable_jit", T::kBool, "true", NoRule(), "JIT compilation (JAX)");
  p.Acc("computation.cpu_threads", T::kAny, "auto", NoRule(), "Thread count or auto");
  p.Acc("computation.vectorization_level", T::kString, "", NoRule(), "Vectorization level",
        kNullable);
  p.Acc("computation.gpu_acceleration", T::kAny, "auto", NoRule(),
        "homodyne's templates of 2025; not used: CPU only (MPI ranks x pinned threads)");
  p.Acc("performance_engine_enabled", T::kBool, "true", NoRule(), "Loader performance engine");
}

void AddLoaderExtras(std::vector<KeySpec>& t) {
  const FieldsOf top([](auto& c) -> auto& { return c; });
  const KeyAdder v(t, "v2_features");
  v.Section("", kUse, "Loader feature switches", kOpen | kNullable);
  v.Acc("output_format", T::kString, "auto", NoRule(), "Loader output format");
  v.Acc("validation_level", T::kString, "basic", NoRule(), "Loader validation level");
  v.Acc("physics_validation", T::kBool, "false", NoRule(), "Physics checks of the data");
  v.Acc("cache_strategy", T::kString, "intelligent", OneOf(ChoiceNames<CacheStrategy>()),
        "NPZ caching of the selected data (no effect here: every run reads the APS file, each "
        "rank its own part)",
        top(&Config::cache_strategy));

  const KeyAdder d(t, "data_filtering");
  d.Section("", kUse, "Loader-level pre-filtering (disabled by default)", kOpen | kNullable);
  d.Used("enabled", T::kBool, "false", NoRule(), "Enable the filter");
  d.Section("q_range", kUse, "q window", kNullable);
  d.Used("q_range.min", T::kFloat, "null", NonNegative(), "Lowest q", kNullable);
  d.Used("q_range.max", T::kFloat, "null", Positive(), "Highest q", kNullable);
  d.Section("phi_range", kUse, "phi window (degrees)", kNullable);
  d.Used("phi_range.min", T::kFloat, "null", NoRule(), "Lowest phi", kNullable);
  d.Used("phi_range.max", T::kFloat, "null", NoRule(), "Highest phi", kNullable);
  d.Used("quality_threshold", T::kFloat, "null", NoRule(), "Minimum quality", kNullable);
  d.Section("frame_filtering", kUse, "Frame sub-sampling", kNullable);
  d.Used("frame_filtering.stride", T::kInt, "1", AtLeast(1), "Keep every n-th frame");
  d.Used("combine_criteria", T::kString, "AND", OneOf({"AND", "OR"}, true), "How filters combine");
  d.Used("fallback_on_empty", T::kBool, "true", NoRule(), "Keep all data if nothing matches");

  const KeyAdder p(t, "preprocessing");
  p.Section("", kAcc, "Loader preprocessing pipeline (disabled by default)", kOpen | kNullable);
  p.Acc("enabled", T::kBool, "false", NoRule(), "Enable preprocessing");
  p.Acc("fallback_on_failure", T::kBool, "true", NoRule(), "Continue on failure");
  p.Acc("save_provenance", T::kBool, "false", NoRule(), "Record the steps applied");

  const KeyAdder q(t, "quality_control");
  q.Section("", kAcc, "Loader data-quality stages (disabled by default)", kOpen | kNullable);
  q.Acc("enabled", T::kBool, "false", NoRule(), "Enable quality control");

  const KeyAdder n(t, "noise_estimation");
  n.Section("", kAcc, "Noise model estimation (not read by homodyne's CLI)", kOpen | kNullable);
  n.Acc("enabled", T::kBool, "false", NoRule(), "Estimate noise");
  n.Acc("model", T::kString, "per_angle", NoRule(), "Noise model");
  n.Acc("adam_config", T::kAnyMapping, "", NoRule(), "Optimizer settings", kNullable);

  const KeyAdder val(t, "validation");
  val.Section("", kAcc, "Validation switches (not read by homodyne)", kOpen | kNullable);
  val.Acc("strict_mode", T::kBool, "false", NoRule(), "Strict validation");
  val.Acc("check_file_existence", T::kBool, "true", NoRule(), "Check that files exist");

  const KeyAdder legacy(t, "optimization_config");
  legacy.Section("", kAcc, "Legacy block; only angle_filtering is read by the loader",
                 kOpen | kNullable);
  legacy.Acc("angle_filtering", T::kAnyMapping, "", NoRule(), "Legacy angle filter", kNullable);
}

}  // namespace

void AddAuxiliaryKeys(std::vector<KeySpec>& table) {
  AddLogging(table);
  AddPlottingAndOutput(table);
  AddPerformance(table);
  AddLoaderExtras(table);
}

}  // namespace homodyne::config::detail
