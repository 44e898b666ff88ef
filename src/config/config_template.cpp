// Text of the commented configuration templates written by `homodyne-config --mode`.
// The values are homodyne's template values (spec §3, §1.8); the prose is ours.
#include "config/config_template.h"

#include <map>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace homodyne::config {
namespace {

constexpr const char* kHead = R"(# homodyne-hpc configuration (@MODE@ analysis)
#
# Written by `homodyne-config --mode @MODE@`. Check it with
#   homodyne-config --validate <this file>
# Every key is described in docs/configuration.md. Unknown or misspelt keys are
# ignored with a warning that names each one and suggests the nearest valid key;
# --strict refuses them.

metadata:
  config_version: "2.23"
  description: "@DESCRIPTION@"
  analysis_mode: "@MODE@"
  parameter_count: @NPARAM@
  template_type: "@MODE@"

# static: D(t) only (D0, alpha, D_offset); laminar_flow: adds the shear rate
# gamma_dot(t) = gamma_dot_t0 * t^beta + gamma_dot_t_offset and the flow angle phi0.
# two_component: xpcsjax's two-component model (docs/model.md): a reference and a flowing
# sample population with transport rates D0_*·t^alpha_* + D_offset_*, velocity
# v0·t^v_beta + v_offset, sample fraction f0·exp(f1·(t − f2)) + f3 (soft-clipped to (0, 1))
# and flow-angle offset phi0_het; frame m is at t = (m + 1)·dt; the gap does not enter.
analysis_mode: "@MODE@"

analyzer_parameters:
  dt: 0.001              # seconds between frames (> 0)
  start_frame: 1         # first frame, counted from 1
  end_frame: 2000        # last frame (inclusive); -1 = up to the last frame
  scattering:
    wavevector_q: 0.0054 # 1/Angstrom; the closest q bin of the file is used
  geometry:
    stator_rotor_gap: 2000000  # gap L in Angstrom (enters the shear term)

experimental_data:
  # The fit reads <data_folder_path>/<data_file_name>; file_path alone also works.
  data_folder_path: "./data/sample/"
  data_file_name: "sample_data.hdf"
  file_path: "./data/sample/sample_data.hdf"   # used when the pair above is absent
  phi_angles_path: "./data/sample/"            # phi_angles_list.txt is written here
  cache_file_path: "./data/sample/"            # folder of the NPZ cache
  cache_filename_template: "cached_c2_@MODE@_q${wavevector_q}_frames_${start_frame}_${end_frame}.npz"
  cache_compression: true

# Keep only angles (degrees, normalised to (-180, 180]) inside any of the ranges.
# A range with min_angle > max_angle wraps around 180 degrees.
phi_filtering:
  enabled: true
  target_ranges:
    - min_angle: -10.0
      max_angle: 10.0
      description: "around 0 degrees"
@PHI_RANGE2@
)";

constexpr const char* kParameters = R"(
initial_parameters:
  parameter_names: [@NAMES@]
  # values: one number per name, same order. null: NLSQ starts at @NLSQ_START@
  # the bounds' middle), CMC at the middle of each bound.
  values: null
  per_angle_scaling:
    contrast: null   # list with one value per kept angle, or null
    offset: null
  active_parameters: null   # subset of parameter_names to optimize; null = all
  fixed_parameters: null    # e.g. {D_offset: 0.0}

# Bounds of the fit and CMC priors (type = prior distribution, prior_mu/prior_sigma).
# contrast/offset bounds apply to every angle.@SCALING_BOUNDS@
parameter_space:
  model: "@MODE@"
  bounds:
@BOUNDS@
  priors:
    contrast:
      dist_type: TruncatedNormal
@CONTRAST_PRIOR@
    offset:
      dist_type: TruncatedNormal
@OFFSET_PRIOR@
)";

constexpr const char* kOptimization = R"(
optimization:
  method: "nlsq"   # the --method flag overrides it
  nlsq:
    max_iterations: 100
    tolerance: 1.0e-8   # relative change of the cost
    xtol: 1.0e-8
    gtol: 1.0e-8
    memory_fraction: 0.75
    # Per-angle scaling treatment and the anti-degeneracy layers; used for laminar_flow
    # and two_component (static NLSQ always fits one contrast and one offset per angle).
    anti_degeneracy:
      enable: @ANTI_DEGENERACY@
      per_angle_mode: "auto"   # auto | constant | individual | fourier
      constant_scaling_threshold: 3
      fourier_order: 2
      hierarchical:
        enable: @HIERARCHICAL@
        max_outer_iterations: 5
      shear_weighting:
        enable: true
        min_weight: 0.3
      gradient_monitoring:
        enable: true
        response: "@GRADIENT_RESPONSE@"
    multi_start:
      enable: false
      n_starts: 10
      seed: 42
      sampling_strategy: "latin_hypercube"
    quality_validation:
      enable: true
      reduced_chi_squared_threshold: 10.0

  streaming:
    enable_checkpoints: false
    checkpoint_dir: "./checkpoints"
    checkpoint_frequency: 10
    keep_last_checkpoints: 3

  # Sampler settings; num_warmup/num_samples/num_chains here replace the values in
  # cmc.per_shard_mcmc.
  mcmc:
    num_warmup: @WARMUP@
    num_samples: @SAMPLES@
    num_chains: @CHAINS@
    target_accept_prob: 0.90
    max_tree_depth: 12
    dense_mass_matrix: true

  cmc:
    enable: "auto"          # shard large data sets (auto: above min_points_for_cmc)
    min_points_for_cmc: 100000
    per_angle_mode: "auto"  # auto | constant | constant_averaged | individual
    constant_scaling_threshold: 3
    prior_tempering: true
    known_sigma: null       # noise sd of c2 if known (fixes sigma); null = sampled
    seed: 42
    sharding:
      strategy: "random"    # random | stratified | contiguous
      num_shards: "auto"
      max_points_per_shard: "auto"
      min_points_per_shard: 10000
    per_shard_mcmc:
      num_warmup: 500
      num_samples: 1500
      num_chains: 4
      target_accept_prob: 0.85
      max_tree_depth: 10
    validation:
      max_per_shard_rhat: @RHAT@
      min_per_shard_ess: 100
      max_divergence_rate: 0.10
      use_nlsq_informed_priors: auto  # two_component: false (docs/cmc.md)
      nlsq_prior_width_factor: 2.0
      max_parameter_cv: @MAX_CV@
    reparameterization:
      enable_d_total: true
      enable_log_gamma: @LOG_GAMMA@
    combination:
      method: "robust_consensus_mc"
      min_success_rate: @MIN_SUCCESS@
    backend_config:
      enable_checkpoints: true
      checkpoint_dir: "./checkpoints/cmc"

logging:
  level: "INFO"
  console:
    enabled: true
  file:
    enabled: false
    path: "./logs/"

output:
  directory: "./homodyne_results"   # the --output-dir flag overrides it
)";

std::string Bound(const std::string& name, const std::string& lo, const std::string& hi,
                  const std::string& mu, const std::string& sigma, const std::string& unit) {
  return "    - name: " + name + "\n      min: " + lo + "\n      max: " + hi +
         "\n      type: TruncatedNormal\n      prior_mu: " + mu + "\n      prior_sigma: " + sigma +
         "\n      unit: \"" + unit + "\"\n";
}

std::string Substitute(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string marker = "@" + key + "@";
    for (std::size_t pos = text.find(marker); pos != std::string::npos;
         pos = text.find(marker, pos + value.size())) {
      text.replace(pos, marker.size(), value);
    }
  }
  if (text.find('@') != std::string::npos) ThrowInternal("unfilled placeholder in config template");
  return text;
}

}  // namespace

std::string DefaultTemplateFileName(AnalysisMode mode) {
  return "homodyne_" + std::string(ToString(mode)) + "_config.yaml";
}

namespace {

// two_component: the registry's bounds; priors centred on the registry's defaults, a
// quarter of the bound width wide.
std::string TwoComponentBounds() {
  std::string b;
  b += Bound("D0_ref", "0.0", "1.0e6", "1.0e4", "2.5e5", "A^2/s^(1+alpha)");
  b += Bound("alpha_ref", "-2.0", "2.0", "0.0", "1.0", "");
  b += Bound("D_offset_ref", "-1.0e4", "1.0e4", "0.0", "5.0e3", "A^2/s");
  b += Bound("D0_sample", "0.0", "1.0e6", "1.0e4", "2.5e5", "A^2/s^(1+alpha)");
  b += Bound("alpha_sample", "-2.0", "2.0", "0.0", "1.0", "");
  b += Bound("D_offset_sample", "-1.0e4", "1.0e4", "0.0", "5.0e3", "A^2/s");
  b += Bound("v0", "0.0", "1.0e6", "1.0e3", "2.5e5", "A/s^(1+v_beta)");
  b += Bound("v_beta", "0.0", "2.0", "1.0", "0.5", "");
  b += Bound("v_offset", "-100.0", "100.0", "0.0", "50.0", "A/s");
  b += Bound("f0", "0.0", "1.0", "0.5", "0.25", "");
  b += Bound("f1", "-1.0", "1.0", "0.0", "0.5", "1/s");
  b += Bound("f2", "-1.0", "1.0", "0.0", "0.5", "s");
  b += Bound("f3", "-1.0", "1.0", "0.0", "0.5", "");
  b += Bound("phi0_het", "-10.0", "10.0", "0.0", "5.0", "degrees");
  return b;
}

}  // namespace

std::string ConfigTemplate(AnalysisMode mode) {
  const bool flow = mode != AnalysisMode::kStatic;
  const bool two = mode == AnalysisMode::kTwoComponent;
  std::string bounds = two ? TwoComponentBounds() : "";
  if (!two) bounds += Bound("D0", "1.0e2", "1.0e5", "1000.0", "1000.0", "A^2/s");
  if (!two) {
    bounds += Bound("alpha", "-2.0", "2.0", flow ? "0.5" : "-1.2", flow ? "0.5" : "0.3", "");
    bounds += Bound("D_offset", "-1.0e5", "1.0e5", flow ? "10.0" : "0.0", flow ? "200.0" : "150.0",
                    "A^2/s");
  }
  if (mode == AnalysisMode::kLaminarFlow) {
    bounds += Bound("gamma_dot_t0", "1.0e-6", "0.5", "0.01", "0.1", "1/s");
    bounds += Bound("beta", "-2.0", "2.0", "0.0", "0.5", "");
    bounds += Bound("gamma_dot_t_offset", "-0.1", "0.1", "0.0", "0.02", "1/s");
    bounds += Bound("phi0", "-10.0", "10.0", "0.0", "5.0", "degrees");
  }
  bounds += Bound("contrast", "0.0", "1.0", "0.5", "0.25", "");
  bounds += Bound("offset", "0.5", "1.5", "1.0", "0.25", "");
  bounds.pop_back();  // the template supplies the line break

  const std::string flow_names =
      "D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0";
  const std::map<std::string, std::string> values = {
      {"MODE", std::string(ToString(mode))},
      {"DESCRIPTION", two    ? "Two-component: reference and flowing sample populations"
                      : flow ? "Laminar flow: diffusion plus time-dependent shear"
                             : "Static: anomalous diffusion without flow"},
      {"NPARAM", std::to_string(PhysicalParameterNames(mode).size())},
      {"PHI_RANGE2", flow ? "    - min_angle: 85.0\n      max_angle: 95.0\n"
                            "      description: \"around 90 degrees\""
                          : "    - min_angle: 170.0\n      max_angle: -170.0\n"
                            "      description: \"around 180 degrees (wraps)\""},
      {"NAMES", two    ? fmt::format("{}", fmt::join(PhysicalParameterNames(mode), ", "))
                : flow ? flow_names
                       : "D0, alpha, D_offset"},
      {"BOUNDS", bounds},
      {"SCALING_BOUNDS",
       two ? "\n# two_component, per_angle_mode individual: every contrast in xpcsjax's [0.1, "
             "0.8]\n"
             "# while contrast's bounds below are [0, 1]; other contrast bounds win."
           : ""},
      {"NLSQ_START",
       two    ? "xpcsjax's\n"
                "  # registry defaults (D0_ref, D0_sample 1e4, v0 1e3, v_beta 1, f0 0.5, the\n"
                "  # others 0; one outside its bounds:"
       : flow ? "homodyne's\n"
                "  # defaults (D0 1e4, alpha -1.5, gamma_dot_t0 1e-3, the others 0; one outside\n"
                "  # its bounds:"
              : "homodyne's\n"
                "  # defaults (D0 1e4, alpha -1.5, D_offset 0; one outside its bounds:"},
      {"CONTRAST_PRIOR", flow ? "      mu: 0.27\n      sigma: 0.15\n      min_val: 0.0\n"
                                "      max_val: 1.0"
                              : "      mu: 0.06\n      sigma: 0.05\n      min_val: 0.0\n"
                                "      max_val: 0.5"},
      {"OFFSET_PRIOR", flow ? "      mu: 1.0\n      sigma: 0.15\n      min_val: 0.5\n"
                              "      max_val: 1.5"
                            : "      mu: 1.0\n      sigma: 0.1\n      min_val: 0.8\n"
                              "      max_val: 1.2"},
      {"ANTI_DEGENERACY", flow ? "true" : "false"},
      {"GRADIENT_RESPONSE", flow && !two ? "hierarchical" : "warn"},
      {"HIERARCHICAL",
       two ? "false   # two_component: xpcsjax's two stages (docs/global.md)" : "true"},
      {"WARMUP", flow ? "500" : "1000"},
      {"SAMPLES", flow ? "1500" : "3000"},
      {"CHAINS", flow ? "2" : "4"},
      {"RHAT", flow ? "1.2" : "1.1"},
      {"MAX_CV", two    ? "1.0   # two_component judges shards by Cochran's Q (docs/cmc.md)"
                 : flow ? "1.0"
                        : "1.5"},
      {"LOG_GAMMA", flow && !two ? "true" : "false"},
      {"MIN_SUCCESS", flow ? "0.80" : "0.90"},
  };
  return Substitute(std::string(kHead) + kParameters + kOptimization, values);
}

}  // namespace homodyne::config
