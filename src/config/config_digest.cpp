#include "config/config_digest.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "raw_config.h"

namespace homodyne::config {
namespace {

// Keys that never change the result of a fit (where checkpoints go, how often, outputs).
bool Ignored(const std::string& path) {
  for (const char* prefix : {"optimization.streaming", "optimization.cmc.backend_config", "output",
                             "logging", "experimental_data"}) {
    const std::string p(prefix);
    if (path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0) return true;
  }
  return false;
}

void Flatten(const YAML::Node& node, const std::string& path, std::vector<std::string>& lines) {
  if (!path.empty() && Ignored(path)) return;
  switch (node.Type()) {
    case YAML::NodeType::Map:
      for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        Flatten(kv.second, path.empty() ? key : path + "." + key, lines);
      }
      break;
    case YAML::NodeType::Sequence:
      for (std::size_t i = 0; i < node.size(); ++i) {
        Flatten(node[i], fmt::format("{}[{}]", path, i), lines);
      }
      break;
    case YAML::NodeType::Scalar:
      lines.push_back(fmt::format("{}: {}", path, node.Scalar()));
      break;
    default:
      lines.push_back(fmt::format("{}: null", path));
      break;
  }
}

}  // namespace

std::string DescribeConfig(const config::Config& cfg,
                           const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> lines;
  if (cfg.raw) Flatten(cfg.raw->root, "", lines);
  std::sort(lines.begin(), lines.end());
  lines.push_back(fmt::format("effective.analysis_mode: {}", cfg.analysis_mode_name));
  // The held set, whatever key held it: a checkpoint of another set has another optimiser
  // vector. Nothing held adds no line, so such runs keep their identity.
  std::vector<std::string> held;
  for (const auto& p : cfg.parameters) {
    if (!p.vary) held.push_back(fmt::format("{}={}", p.name, p.initial));
  }
  if (!held.empty()) {
    lines.push_back(fmt::format("effective.held_parameters: {}", fmt::join(held, ",")));
  }
  for (const auto& [k, v] : overrides) lines.push_back(fmt::format("cli.{}: {}", k, v));
  return fmt::format("{}\n", fmt::join(lines, "\n"));
}

}  // namespace homodyne::config
