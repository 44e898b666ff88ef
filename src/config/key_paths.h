// Key paths that code outside src/config names, mostly in messages ("optimization.nlsq.cmaes
// .popsize must be ≥ 4"). The key table (key_table.h) is the one place a key is declared; the
// sections here are spelled once so that no other layer spells a path (a test greps for
// literal paths outside src/config), and Key() refuses a path the table does not know, so
// a renamed key cannot leave a message naming a key that no longer exists.
#pragma once

#include <string>
#include <string_view>

namespace homodyne::config::keys {

inline constexpr std::string_view kMetadata = "metadata";
inline constexpr std::string_view kAnalyzerParameters = "analyzer_parameters";
inline constexpr std::string_view kInitialParameters = "initial_parameters";
inline constexpr std::string_view kPhiFiltering = "phi_filtering";
inline constexpr std::string_view kParameterSpace = "parameter_space";
inline constexpr std::string_view kOutput = "output";
inline constexpr std::string_view kLogging = "logging";
inline constexpr std::string_view kNlsq = "optimization.nlsq";
inline constexpr std::string_view kNlsqAntiDegeneracy = "optimization.nlsq.anti_degeneracy";
inline constexpr std::string_view kNlsqGradientMonitoring =
    "optimization.nlsq.anti_degeneracy.gradient_monitoring";
inline constexpr std::string_view kNlsqCmaes = "optimization.nlsq.cmaes";
inline constexpr std::string_view kNlsqMultiStart = "optimization.nlsq.multi_start";
inline constexpr std::string_view kNlsqRecovery = "optimization.nlsq.recovery";
inline constexpr std::string_view kStreaming = "optimization.streaming";
inline constexpr std::string_view kMcmc = "optimization.mcmc";
inline constexpr std::string_view kCmc = "optimization.cmc";
inline constexpr std::string_view kCmcSharding = "optimization.cmc.sharding";
inline constexpr std::string_view kCmcValidation = "optimization.cmc.validation";
inline constexpr std::string_view kCmcPerShardMcmc = "optimization.cmc.per_shard_mcmc";
inline constexpr std::string_view kCmcBackendConfig = "optimization.cmc.backend_config";

// "<section>.<leaf>"; an internal error if the table has no such key (leaf may be nested,
// "hierarchical.trigger", a list's "bounds[].type" or a wildcard's "priors.D0.dist_type").
std::string Key(std::string_view section, std::string_view leaf);
// "<section>.<a>/<b>": two keys set together ("analyzer_parameters.start_frame/end_frame").
std::string KeyPair(std::string_view section, std::string_view a, std::string_view b);

// The frame window, named by messages about too few frames.
std::string FrameWindowKey();

}  // namespace homodyne::config::keys
