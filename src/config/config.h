// The typed configuration produced by the reader (config_reader.h).
//
// Plain structs with every default filled in from the key table (key_table.h). Where
// homodyne's code default differs from its template value for the fit path, the code
// default is used (noted per field). Keys without a typed field here are still
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

namespace homodyne::config {

struct AnalyzerParameters {
  double dt = 1.0;                  // s; analyzer_parameters.dt → experimental_data.dt → 1.0
  std::string dt_source;            // key the value came from, or "default"
  int start_frame = 1;              // 1-based
  int end_frame = -1;               // 1-based inclusive, -1 = last frame
  double wavevector_q = 0.0054;     // 1/Angstrom
  double stator_rotor_gap = 2.0e6;  // Angstrom; fallback chain of spec §2.5
  std::string stator_rotor_gap_source;  // key the value came from, or "default"
};

struct ExperimentalData {
  std::string data_folder_path;
  std::string data_file_name;
  std::string file_path;  // informational
  std::string phi_angles_path = "./";
  std::string cache_file_path;  // empty = data_folder_path
  std::string cache_filename_template = "cached_c2_frames_${start_frame}_${end_frame}.npz";
  bool cache_compression = true;
  // data_folder_path joined with data_file_name (empty if either is missing).
  std::string DataFile() const;
};

struct AngleRange {
  double min_angle = 0.0;
  double max_angle = 0.0;
  std::string description;
};

struct PhiFiltering {
  bool enabled = false;  // code default when the key is absent (templates: true)
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

struct ParameterBound {
  std::string name;  // canonical base name (physical, "contrast" or "offset")
  double min = 0.0;
  double max = 0.0;
  std::string prior_type = "TruncatedNormal";
  std::optional<double> prior_mu;     // default: midpoint
  std::optional<double> prior_sigma;  // default: (max - min) / 4
  std::string unit;
};

struct PriorSpec {
  std::string dist_type = "TruncatedNormal";
  std::optional<double> mu;
  std::optional<double> sigma;
  std::optional<double> min_val;
  std::optional<double> max_val;
};

struct ParameterSpace {
  std::vector<ParameterBound> bounds;       // entries of the file (canonical names)
  std::map<std::string, PriorSpec> priors;  // canonical base name → prior
};

// Effective bounds and starting value of one parameter.
struct EffectiveParameter {
  std::string name;
  double min = 0.0;
  double max = 0.0;
  double initial = 0.0;
  bool bounds_from_config = false;   // parameter_space.bounds vs built-in defaults
  bool initial_from_config = false;  // initial_parameters.values vs bound midpoint
};

struct AntiDegeneracy {
  bool section_present = false;  // homodyne applies the system only if the section exists
  bool enable = true;
  std::string per_angle_mode = "auto";
  int constant_scaling_threshold = 3;
  int fourier_order = 2;
};

struct MultiStart {
  bool enable = false;
  int n_starts = 10;
  int seed = 42;
  std::string sampling_strategy = "latin_hypercube";
  int n_workers = 0;
  bool use_screening = true;
  double screen_keep_fraction = 0.5;
  int refine_top_k = 3;
  double refinement_ftol = 1e-12;
  double degeneracy_threshold = 0.1;
};

struct NlsqOptions {
  int max_iterations = 1000;  // homodyne code default (templates say 100)
  double tolerance = 1e-8;    // ftol
  double xtol = 1e-8;
  double gtol = 1e-8;
  double memory_fraction = 0.75;
  std::optional<double> memory_threshold_gb;
  std::map<std::string, double> x_scale_map;  // canonical name → scale
  AntiDegeneracy anti_degeneracy;
  MultiStart multi_start;
};

struct StreamingOptions {
  bool enable_checkpoints = false;
  std::string checkpoint_dir = "./checkpoints";
  int checkpoint_frequency = 10;
  bool resume_from_checkpoint = false;
  int keep_last_checkpoints = 3;
  bool enable_fault_tolerance = true;
  int max_retries_per_batch = 2;
  double min_success_rate = 0.5;
  std::optional<int> batch_size;
};

struct CmcBackendConfig {
  std::string name = "auto";
  bool enable_checkpoints = true;
  int checkpoint_frequency = 100;  // NUTS iterations per chain between checkpoints
  std::string checkpoint_dir = "./checkpoints/cmc";
  int keep_last_checkpoints = 3;
  bool resume_from_checkpoint = true;
};

struct CmcSharding {
  std::string strategy = "random";
  std::optional<int> num_shards;            // nullopt = auto
  std::optional<int> max_points_per_shard;  // nullopt = auto
  int min_points_per_shard = 10000;
  int seed_base = 0;
  int min_points_per_param = 1500;
};

struct PerShardMcmc {
  int num_warmup = 500;
  int num_samples = 1500;
  int num_chains = 4;
  double target_accept_prob = 0.85;
  int max_tree_depth = 10;
};

struct CmcValidation {
  bool strict_mode = false;
  double min_per_shard_ess = 100;
  double max_per_shard_rhat = 1.1;
  double max_between_shard_kl = 2.0;
  double min_success_rate = 0.9;
  double max_divergence_rate = 0.1;
  bool require_nlsq_warmstart = false;
  bool use_nlsq_informed_priors = true;
  double nlsq_prior_width_factor = 2.0;
  double max_parameter_cv = 1.0;
  bool heterogeneity_abort = true;
};

struct CmcReparameterization {
  bool enable_d_total = true;
  bool enable_log_gamma = true;
  double bimodal_min_weight = 0.2;
  double bimodal_min_separation = 0.5;
};

struct CmcCombination {
  std::string method = "robust_consensus_mc";
  bool validate_results = true;
  double min_success_rate = 0.9;
  double min_success_rate_warning = 0.8;
};

struct CmcOptions {
  std::string enable = "auto";  // "auto", "true" or "false"
  long long min_points_for_cmc = 100000;
  std::string per_angle_mode = "auto";
  int constant_scaling_threshold = 3;
  bool prior_tempering = true;
  long long seed = 42;  // homodyne code default
  double per_shard_timeout = 3600;
  double heartbeat_timeout = 600;
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
  FitMethod method = FitMethod::kNlsq;
  NlsqOptions nlsq;
  StreamingOptions streaming;
  CmcOptions cmc;
};

struct LoggingOptions {
  bool enabled = true;
  std::string level = "INFO";
  bool console_enabled = true;
  std::string console_level = "INFO";
  bool file_enabled = false;
  std::string file_level = "DEBUG";
  std::string file_path = "./logs/";
  std::string file_name = "homodyne_analysis.log";
  std::map<std::string, std::string> modules;
};

struct RawConfig;  // the validated YAML tree (defined in src/config)

struct Config {
  std::string source;  // file name (or label) the config was read from
  AnalysisMode analysis_mode = AnalysisMode::kStatic;
  std::string analysis_mode_name = "static_isotropic";  // as written, lower-cased
  AnalyzerParameters analyzer;
  ExperimentalData experimental_data;
  double q_tolerance_fraction = 0.1;
  PhiFiltering phi_filtering;
  InitialParameters initial_parameters;
  ParameterSpace parameter_space;
  // Effective physical parameters in fit order (PhysicalParameterNames(analysis_mode)).
  std::vector<EffectiveParameter> parameters;
  EffectiveParameter contrast;  // bounds of every contrast_k (initial = midpoint)
  EffectiveParameter offset;    // bounds of every offset_k (initial = midpoint)
  Optimization optimization;
  LoggingOptions logging;
  std::string output_directory = "./homodyne_results";
  // output.compress_hdf5 / output.compression_level: deflate (after the shuffle filter) for
  // the large arrays of the HDF5 result files (fitted_data.h5 and the plots' data files).
  // Hdf5DeflateLevel() is the level to use: 0 = stored uncompressed.
  bool compress_hdf5 = true;
  int compression_level = 4;  // 0–9
  int Hdf5DeflateLevel() const { return compress_hdf5 ? compression_level : 0; }
  std::string cache_strategy = "intelligent";      // v2_features.cache_strategy
  bool legacy_flat_layout = false;                 // converted from the flat legacy layout
  std::vector<std::string> notes;                  // notes for the user (fallbacks, overrides)
  std::vector<std::string> accepted_keys_present;  // status-accepted keys found in the file
  std::shared_ptr<const RawConfig> raw;            // validated tree, for lookups and echo

  // The effective parameter with this canonical name, or nullptr.
  const EffectiveParameter* FindParameter(const std::string& name) const;
};

}  // namespace homodyne::config
