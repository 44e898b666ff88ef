// The typed configuration produced by the reader (config_reader.h).
//
// Plain structs. Their defaults are the key table's (key_table.h), where each key names its
// field: a default-constructed Config holds zeros and empty strings, DefaultConfig() in
// config_reader.h holds every table default. Keys without a typed field here are still
// available through ConfigNumber/ConfigString/... in config_reader.h and are echoed by
// EffectiveConfigYaml.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/parameters.h"
#include "core/log.h"
#include "lsq/local_method.h"
#include "model/parameter_layout.h"
#include "model/robust_loss.h"

namespace homodyne::config {

struct AnalyzerParameters {
  double dt{};                // s; analyzer_parameters.dt → experimental_data.dt → 1.0
  std::string dt_source;      // key the value came from, or "default"
  int start_frame{};          // 1-based
  int end_frame{};            // 1-based inclusive, -1 = last frame
  double wavevector_q{};      // 1/Angstrom
  double stator_rotor_gap{};  // Angstrom; fallback chain of spec §2.5
  std::string stator_rotor_gap_source;  // key the value came from, or "default"
};

struct ExperimentalData {
  std::string data_folder_path;
  std::string data_file_name;
  std::string file_path;  // xpcsjax's full path; used when the folder/name pair is absent
  std::string phi_angles_path;
  std::string cache_file_path;  // empty = data_folder_path
  std::string cache_filename_template;
  bool cache_compression{};
  // data_folder_path joined with data_file_name, else file_path (empty if neither).
  std::string DataFile() const;
};

struct AngleRange {
  double min_angle = 0.0;
  double max_angle = 0.0;
  std::string description;
};

struct PhiFiltering {
  bool enabled{};
  std::vector<AngleRange> target_ranges;
};

struct InitialParameters {
  std::vector<std::string> parameter_names;                   // canonical, as listed in the file
  std::optional<std::vector<double>> values;                  // as listed (same order as names)
  std::optional<std::vector<double>> contrast;                // per kept angle
  std::optional<std::vector<double>> offset;                  // per kept angle
  std::optional<std::vector<std::string>> active_parameters;  // canonical names
  std::map<std::string, double> fixed_parameters;             // canonical name → value
};

// The CMC prior families a parameter_space may name (physics spec §1.7–1.8); the densities
// are cmc/prior.h's.
enum class PriorType { kTruncatedNormal, kNormal, kUniform, kLogNormal, kHalfNormal, kBetaScaled };

struct ParameterBound {
  std::string name;  // canonical base name (physical, "contrast" or "offset")
  double min = 0.0;
  double max = 0.0;
  PriorType prior_type = PriorType::kTruncatedNormal;
  std::optional<double> prior_mu;     // default: midpoint
  std::optional<double> prior_sigma;  // default: (max - min) / 4
  std::string unit;
  std::optional<double> value;  // start value (xpcsjax's overlay; wins over initial_parameters)
  std::optional<bool> vary;     // false: held at its start
};

struct PriorSpec {
  PriorType dist_type = PriorType::kTruncatedNormal;
  std::optional<double> mu;
  std::optional<double> sigma;
  std::optional<double> min_val;
  std::optional<double> max_val;
};

struct ParameterSpace {
  std::vector<ParameterBound> bounds;       // entries of the file (canonical names)
  std::map<std::string, PriorSpec> priors;  // canonical base name → prior
};

// One entry of two_component's grouped format, parameters.<group>.<name> (xpcsjax's
// ParameterSpace.from_config): applied after initial_parameters and parameter_space.
struct GroupedParameter {
  std::string key;   // "parameters.<group>.<name as written>", for messages
  std::string name;  // canonical: a physical name, "contrast" or "offset"
  std::optional<double> value;
  std::optional<double> min;  // min and max come together
  std::optional<double> max;
  std::optional<bool> vary;
};

// The top-level scaling: section (xpcsjax's model scaling).
struct ScalingSection {
  // Start of every angle's contrast/offset instead of the estimate from the data (wins
  // over parameters.scaling and initial_parameters.per_angle_scaling).
  std::optional<double> initial_contrast;
  std::optional<double> initial_offset;
};

// The CMC prior of one parameter on its bounds [min, max] of width w, resolved with the
// parameter (ResolveParameters): parameter_space.priors.<name>, else its bounds entry's
// type/prior_mu/prior_sigma, else TruncatedNormal(centre, w/4). The centre is the midpoint
// for homodyne's modes; for two_component the registry default when it lies inside the
// bounds (else the midpoint), the prior the two_component template writes.
struct ParameterPrior {
  PriorType type = PriorType::kTruncatedNormal;
  double mu = 0.0;
  double sigma = 0.0;
};

// Effective bounds and starting value of one parameter.
struct EffectiveParameter {
  std::string name;
  double min = 0.0;
  double max = 0.0;
  double initial = 0.0;
  bool bounds_from_config = false;  // parameter_space.bounds vs built-in defaults
  // The config gives the start: initial_parameters.values/fixed_parameters, a bounds entry's
  // or a grouped entry's value; for contrast/offset a scalar start (parameters.scaling,
  // scaling.initial_*, a bounds entry's value) that replaces the estimate from the data.
  // Else see NlsqDefaultStart.
  bool initial_from_config = false;
  // false: held at `initial` (fixed_parameters, left out of active_parameters, or vary: false);
  // the fit leaves it out of the optimiser vector, the DOF and the global search.
  bool vary = true;
  ParameterPrior prior;  // the sampled parameter's configured CMC prior
};

// The choice keys without an enum of a lower layer; their names are in choices.h, the one
// place a choice set is spelt.
enum class HierarchicalTrigger { kSuspect, kAlways };   // anti_degeneracy.hierarchical.trigger
enum class StallRecovery { kRestarts, kCmaes, kNone };  // recovery.on_stall
enum class MirrorCheck { kAuto, kAlways, kNever };      // recovery.mirror_check
enum class ShardStrategy { kRandom, kStratified, kContiguous };  // cmc.sharding.strategy
enum class CombinationMethod {                                   // cmc.combination.method
  kRobustConsensusMc,
  kConsensusMc,
  kWeightedGaussian,  // deprecated in homodyne: run as consensus_mc
  kSimpleAverage,     // deprecated in homodyne: run as consensus_mc
};
// output.layout; kAuto only until the reader resolves it (Config::output_layout).
enum class OutputLayout { kAuto, kHomodyne, kXpcsjax };
enum class FittedDataLevel { kFull, kModel, kNone };  // output.fitted_data
// anti_degeneracy.gradient_monitoring.response: xpcsjax's names, recorded only.
enum class GradientResponse { kWarn, kHierarchical, kReset, kAbort };
// anti_degeneracy.regularization.mode: two_component's CV rows are on for all but kNone.
enum class RegularizationMode { kNone, kRelative, kAbsolute, kAuto, kTikhonov, kAdaptive };
enum class SamplingStrategy { kLatinHypercube, kRandom };  // multi_start.sampling_strategy
// cmaes.preset: the generations per run (50, 100, 200) unless max_generations is set.
enum class CmaesPreset { kFast, kStandard, kGlobal };
// cmaes.restart_strategy; CMA-ES checkpoints store the value: keep the order.
enum class CmaesRestart { kNone, kBipop };
// A key that takes true, false or auto (its rule decides what auto means where it is used).
enum class AutoSwitch { kAuto, kTrue, kFalse };
enum class CacheStrategy { kIntelligent, kNone };  // v2_features.cache_strategy

struct AntiDegeneracy {
  bool section_present = false;  // homodyne applies the system only if the section exists
  bool enable{};
  model::PerAngleMode per_angle_mode{};
  int constant_scaling_threshold{};
  int fourier_order{};
  bool hierarchical_enable{};
  // hierarchical.enable (or enable_hierarchical) is written in the config: two_component's
  // two stages run only then (xpcsjax's default is false, ours true for laminar_flow).
  bool hierarchical_enable_written = false;
  HierarchicalTrigger hierarchical_trigger{};
  int hierarchical_max_outer{};
  double hierarchical_outer_tolerance{};
  int hierarchical_physical_max_it{};
  int hierarchical_per_angle_max_it{};
  bool shear_weighting_enable{};
  double shear_weighting_alpha{};
  double shear_weighting_min_weight{};
  int shear_weighting_update_frequency{};
  bool shear_weighting_normalize{};
  // gradient_monitoring: the observational gradient-collapse monitor (nlsq/gradient_monitor.h).
  bool gradient_monitoring_enable{};
  double gradient_ratio_threshold{};
  int gradient_consecutive_triggers{};
  GradientResponse gradient_response{};
  // two_component only (xpcsjax's L3): anything but none adds the CV penalty rows.
  RegularizationMode regularization_mode{};
  std::optional<double> regularization_lambda;  // null: xpcsjax's heterodyne default 0.01
};

struct MultiStart {
  bool enable{};
  int n_starts{};
  int seed{};
  SamplingStrategy sampling_strategy{};
  int n_workers{};
  bool use_screening{};
  double screen_keep_fraction{};
  int refine_top_k{};
  double refinement_ftol{};
  double degeneracy_threshold{};
};

// optimization.nlsq.cmaes (the CMA-ES global stage, src/global/global_stage.h).
struct Cmaes {
  bool enable{};
  CmaesPreset preset{};
  std::optional<int> max_generations;  // overrides the preset's
  double sigma{};
  double sigma_warmstart{};
  bool nlsq_warmstart{};
  bool warmstart_auto_skip{};
  double warmstart_skip_threshold{};
  std::optional<int> popsize;
  double tol_fun{};
  double tol_x{};
  CmaesRestart restart_strategy{};
  int max_restarts{};
  bool auto_select{};
  double scale_threshold{};
  double normalization_epsilon{};
  bool refine_with_nlsq{};
  model::LossKind refinement_loss{};  // the refinement's loss (C = sigma)
  long long seed{};
  long long search_max_points{};  // 0: every point
};

// optimization.nlsq.recovery: stall recovery and the phi0 basin check.
struct NlsqRecovery {
  StallRecovery on_stall{};
  int stall_starts{};
  int phi0_restarts{};
  MirrorCheck mirror_check{};
  bool velocity_scan{};
  bool transport_scan{};
  bool start_screen{};
  long long screen_max_points{};  // 0: the restarts and the phi0 check on all points
};

struct NlsqOptions {
  int max_iterations{};
  double tolerance{};  // ftol
  double xtol{};
  double gtol{};
  lsq::LocalMethod local_solver{};
  double memory_fraction{};
  std::optional<double> memory_threshold_gb;
  std::map<std::string, double> x_scale_map;  // canonical name → scale
  model::LossKind loss{};
  double f_scale{};  // the robust loss's C, in c2 units (homodyne's)
  AntiDegeneracy anti_degeneracy;
  MultiStart multi_start;
  Cmaes cmaes;
  NlsqRecovery recovery;
};

struct StreamingOptions {
  bool enable_checkpoints{};
  std::string checkpoint_dir;
  int checkpoint_frequency{};
  bool resume_from_checkpoint{};
  int keep_last_checkpoints{};
  bool fatal_checkpoint_errors{};
  bool enable_fault_tolerance{};
  int max_retries_per_batch{};
  double min_success_rate{};
  std::optional<int> batch_size;
};

struct CmcBackendConfig {
  std::string name;
  bool enable_checkpoints{};
  int checkpoint_frequency{};  // NUTS iterations per chain between checkpoints
  std::string checkpoint_dir;
  int keep_last_checkpoints{};
  bool resume_from_checkpoint{};
};

struct CmcSharding {
  ShardStrategy strategy{};
  std::optional<int> num_shards;            // nullopt = auto
  std::optional<int> max_points_per_shard;  // nullopt = auto
  int min_points_per_shard{};
  int seed_base{};
  int min_points_per_param{};
};

struct PerShardMcmc {
  int num_warmup{};
  int num_samples{};
  int num_chains{};
  double target_accept_prob{};
  int max_tree_depth{};
};

struct CmcValidation {
  bool strict_mode{};
  double min_per_shard_ess{};
  double max_per_shard_rhat{};
  double max_between_shard_kl{};
  double min_success_rate{};
  double max_divergence_rate{};
  int warmup_retries{};  // reruns of a shard whose divergence rate is above the maximum
  bool require_nlsq_warmstart{};
  AutoSwitch use_nlsq_informed_priors{};  // auto: not for two_component (cmc_phases.h)
  double nlsq_prior_width_factor{};
  double max_parameter_cv{};
  bool heterogeneity_abort{};
};

struct CmcReparameterization {
  bool enable_d_total{};
  bool enable_log_gamma{};
  bool scaling_geometry{};
  bool log_d0{};
  bool laplace_whitening{};
  double bimodal_min_weight{};
  double bimodal_min_separation{};
};

struct CmcCombination {
  CombinationMethod method{};
  bool validate_results{};
  double min_success_rate{};
  double min_success_rate_warning{};
};

struct CmcOptions {
  AutoSwitch enable{};
  long long min_points_for_cmc{};
  model::PerAngleMode per_angle_mode{};
  int constant_scaling_threshold{};
  bool prior_tempering{};
  std::optional<double> known_sigma;  // null: σ is sampled; a number: the noise sd, fixed
  long long seed{};
  double per_shard_timeout{};
  double heartbeat_timeout{};
  CmcBackendConfig backend_config;
  CmcSharding sharding;
  PerShardMcmc per_shard_mcmc;  // after the optimization.mcmc overrides
  CmcValidation validation;
  CmcReparameterization reparameterization;
  CmcCombination combination;
};

// What a run fits: optimization.method, the --method flag, a batch task's method.
enum class FitMethod { kNlsq, kCmc, kBoth };
std::string_view ToString(FitMethod method);  // "nlsq", "cmc" or "both"
// "nlsq", "cmc", "both", and homodyne's alias "mcmc" for cmc; anything else is a bad-input
// Error naming `key` (and `source`, the file, when given).
FitMethod ParseFitMethod(std::string_view text, std::string_view key = "optimization.method",
                         std::string_view source = {});

struct Optimization {
  FitMethod method{};
  NlsqOptions nlsq;
  StreamingOptions streaming;
  CmcOptions cmc;
};

// homodyne's logging section (docs/configuration.md, "logging"); the command line's -v and
// --quiet take precedence over the console level.
struct LoggingOptions {
  bool enabled{};
  LogLevel level{};
  bool console_enabled{};
  std::optional<LogLevel> console_level;  // null: `level`
  bool file_enabled{};
  LogLevel file_level{};
  std::string file_path;  // "" (null): <output directory>/logs
  std::string file_name;
  std::map<std::string, std::string> modules;
};

struct RawConfig;  // the validated YAML tree (defined in src/config)

struct Config {
  std::string source;  // file name (or label) the config was read from
  AnalysisMode analysis_mode{};
  std::string analysis_mode_name;  // as written, lower-cased
  AnalyzerParameters analyzer;
  ExperimentalData experimental_data;
  double q_tolerance_fraction{};
  PhiFiltering phi_filtering;
  InitialParameters initial_parameters;
  ParameterSpace parameter_space;
  std::vector<GroupedParameter> grouped_parameters;  // two_component's parameters: section
  ScalingSection scaling;
  // Effective physical parameters in fit order (PhysicalParameterNames(analysis_mode)).
  std::vector<EffectiveParameter> parameters;
  // Bounds of every contrast_k / offset_k; initial = a configured scalar start
  // (initial_from_config) or the midpoint.
  EffectiveParameter contrast;
  EffectiveParameter offset;
  Optimization optimization;
  LoggingOptions logging;
  std::string output_directory;
  std::string output_base_directory;  // output.base_directory: the parent of output_directory
  OutputLayout output_layout{};       // output.layout, resolved by the reader: never kAuto
  // Why that layout, for the run's log line: "output.layout: xpcsjax", "an xpcsjax config
  // (optimization.angle_filtering)", …
  std::string output_layout_reason;
  // output.compress_hdf5 / output.compression_level: deflate (after the shuffle filter) for
  // the large arrays of the HDF5 result files (fitted_data.h5 and the plots' data files).
  // Hdf5DeflateLevel() is the level to use: 0 = stored uncompressed.
  bool compress_hdf5{};
  int compression_level{};  // 0–9
  int Hdf5DeflateLevel() const { return compress_hdf5 ? compression_level : 0; }
  // output.fitted_data: which arrays fitted_data.h5 holds ("full", "model" or "none").
  FittedDataLevel fitted_data{};
  CacheStrategy cache_strategy{};
  bool legacy_flat_layout = false;  // converted from the flat legacy layout
  std::vector<std::string> notes;   // notes for the user (fallbacks, overrides)
  // Compatibility notes: keys of earlier homodyne/xpcsjax versions read under today's keys,
  // xpcsjax's flat keys and homodyne's sampler keys overriding their nested equivalents, one
  // note each; shown once at the default verbosity (the user wrote them and should see how
  // they were read).
  std::vector<std::string> earlier_keys;
  std::vector<std::string> accepted_keys_present;  // status-accepted keys found in the file
  // Unknown keys ignored by a lenient read (ReadOptions::strict false), each as
  // "key (unknown key, line N; did you mean …?)"; the caller warns.
  std::vector<std::string> ignored_keys;
  std::shared_ptr<const RawConfig> raw;  // validated tree, for lookups and echo

  // The effective parameter with this canonical name, or nullptr.
  const EffectiveParameter* FindParameter(const std::string& name) const;
};

}  // namespace homodyne::config
