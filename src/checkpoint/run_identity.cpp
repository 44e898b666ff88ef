#include "checkpoint/run_identity.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/fnv1a.h"

namespace homodyne::checkpoint {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

std::string HashText(const std::string& text) { return fmt::format("{:016x}", Fnv1a(text)); }

std::string RunIdentity::config_hash() const { return HashText(config_description); }
std::string RunIdentity::data_hash() const { return HashText(data_description); }

std::string RunFolderName(const RunIdentity& identity) {
  return identity.data_hash().substr(0, 8) + "-" + identity.config_hash().substr(0, 8);
}

std::string DescribeData(const std::string& content_digest, double q,
                         const std::vector<double>& phi_deg, std::int64_t n_frames, double dt,
                         std::int64_t points) {
  std::string out;
  out += fmt::format("data.content: {}\n", content_digest);
  out += fmt::format("data.q: {:.17g}\n", q);
  out += fmt::format("data.phi_deg: [{:.17g}]\n", fmt::join(phi_deg, ", "));
  out += fmt::format("data.frames: {}\n", n_frames);
  out += fmt::format("data.dt: {:.17g}\n", dt);
  out += fmt::format("data.points: {}\n", points);
  return out;
}

std::string FirstDifference(const std::string& checkpoint, const std::string& current) {
  const auto a = Lines(checkpoint);
  const auto b = Lines(current);
  // Compare by key so an inserted key is named, not the line after it.
  auto key_of = [](const std::string& line) { return line.substr(0, line.find(": ")); };
  std::map<std::string, std::string> ma, mb;
  for (const auto& l : a) ma[key_of(l)] = l;
  for (const auto& l : b) mb[key_of(l)] = l;
  for (const auto& [k, line] : ma) {
    auto it = mb.find(k);
    if (it == mb.end()) return fmt::format("checkpoint has '{}', this run has no {}", line, k);
    if (it->second != line) {
      return fmt::format("checkpoint has '{}', this run has '{}'", line, it->second);
    }
  }
  for (const auto& [k, line] : mb) {
    if (!ma.count(k)) return fmt::format("this run has '{}', the checkpoint has no {}", line, k);
  }
  return {};
}

}  // namespace homodyne::checkpoint
