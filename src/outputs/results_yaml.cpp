#include "outputs/results_yaml.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "outputs/npz_file.h"

namespace homodyne {
namespace {

// JSON → YAML node by node; numbers keep every digit (doubles as %.17g), so a script reads
// the same values from either file.
void Emit(YAML::Emitter& out, const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : j.items()) {
        out << YAML::Key << key << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      return;
    case nlohmann::json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& value : j) Emit(out, value);
      out << YAML::EndSeq;
      return;
    case nlohmann::json::value_t::string:
      out << YAML::DoubleQuoted << j.get<std::string>();
      return;
    case nlohmann::json::value_t::boolean:
      out << j.get<bool>();
      return;
    case nlohmann::json::value_t::number_integer:
      out << j.get<std::int64_t>();
      return;
    case nlohmann::json::value_t::number_unsigned:
      out << j.get<std::uint64_t>();
      return;
    case nlohmann::json::value_t::number_float:
      out << YAML::Precision(17) << j.get<double>();
      return;
    default:
      out << YAML::Null;
      return;
  }
}

}  // namespace

void WriteHomodyneResultsYaml(const std::filesystem::path& dir) {
  const std::filesystem::path json_path = dir / "homodyne_results.json";
  std::ifstream in(json_path);
  if (!in) return;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    ThrowIoError(std::string("cannot read the results back: ") + e.what(), json_path.string());
  }
  YAML::Emitter out;
  Emit(out, j);
  WriteFileAtomically(dir / "homodyne_results.yaml", std::string(out.c_str()) + "\n");
}

void WriteHomodyneResultsNpz(const std::filesystem::path& dir) {
  const std::filesystem::path json_path = dir / "homodyne_results.json";
  std::ifstream in(json_path);
  if (!in) return;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  outputs::NpzArchive npz(dir / "homodyne_results.npz");
  npz.AddStrings("results_summary", {text});
  npz.Commit();
}

}  // namespace homodyne
