// Entry points of the config reader: parse, convert the legacy layout, validate against
// the key table, build the typed Config.
#include "config/config_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "config_builder.h"
#include "core/errors.h"
#include "key_binding.h"
#include "schema_check.h"

namespace homodyne::config {

std::string ExperimentalData::DataFile() const {
  // homodyne locates the data by the folder and name alone; a config with only xpcsjax's
  // full path (its "modern" form) is read as xpcsjax reads it.
  // A file name alone (xpcsjax's documentation) is looked for in the current folder.
  if (file_path.empty() && data_folder_path.empty() && !data_file_name.empty()) {
    return (std::filesystem::path(".") / data_file_name).string();
  }
  if (data_folder_path.empty() || data_file_name.empty()) return file_path;
  return (std::filesystem::path(data_folder_path) / data_file_name).string();
}

std::string_view ToString(FitMethod method) { return ChoiceName(method); }

FitMethod ParseFitMethod(std::string_view text, std::string_view key, std::string_view source) {
  if (const auto method = FindChoice<FitMethod>(text)) return *method;
  ThrowBadInput(fmt::format("expected nlsq, cmc or both, found '{}'", text), std::string(source),
                std::string(key));
}

const EffectiveParameter* Config::FindParameter(const std::string& name) const {
  const std::string canonical = CanonicalParameterName(analysis_mode, name);
  for (const auto& p : parameters) {
    if (p.name == canonical) return &p;
  }
  if (canonical == "contrast") return &contrast;
  if (canonical == "offset") return &offset;
  return nullptr;
}

namespace {
using detail::ProblemList;
using detail::ValueReader;

bool HasParentReference(const std::string& path) {
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "..") return true;
  }
  return false;
}

// Fallbacks of the two chains below, used when no key of the chain is given.
constexpr double kFallbackDt = 1.0;                // s, homodyne's loader fallback
constexpr double kFallbackStatorRotorGap = 2.0e6;  // Angstrom (spec §2.5)

void BuildAnalyzer(const ValueReader& r, Config& c, ProblemList& problems) {
  AnalyzerParameters& a = c.analyzer;
  if (r.Has("analyzer_parameters.dt")) {
    a.dt = r.Number("analyzer_parameters.dt");
    a.dt_source = "analyzer_parameters.dt";
  } else if (r.Has("experimental_data.dt")) {
    a.dt = r.Number("experimental_data.dt");
    a.dt_source = "experimental_data.dt";
  } else {
    a.dt = kFallbackDt;
    a.dt_source = "default";
    c.notes.push_back("analyzer_parameters.dt is not set: using dt = 1.0 s (homodyne's fallback)");
  }
  if (a.end_frame != -1 && a.end_frame < a.start_frame) {
    problems.Add("analyzer_parameters.end_frame",
                 fmt::format("must be -1 (last frame) or >= start_frame ({}), found {}{}",
                             a.start_frame, a.end_frame, r.Line("analyzer_parameters.end_frame")));
  }
  // xpcsjax documents both keys but its code reads neither: they change nothing there.
  if (r.Has("analyzer_parameters.frame_step") && r.Int("analyzer_parameters.frame_step") > 1) {
    c.notes.push_back(fmt::format(
        "analyzer_parameters.frame_step = {} is not used (xpcsjax reads it neither): every frame "
        "from start_frame to end_frame is fitted",
        r.Int("analyzer_parameters.frame_step")));
  }
  if (r.Has("analyzer_parameters.time_unit")) {
    const std::string unit = r.String("analyzer_parameters.time_unit");
    if (unit != "seconds" && unit != "s") {
      c.notes.push_back(fmt::format(
          "analyzer_parameters.time_unit = {} is not used (xpcsjax reads it neither): dt is in "
          "seconds",
          unit));
    }
  }
  // Gap L: analyzer geometry → experimental_data geometry → sample_detector_distance → 2e6 Å.
  a.stator_rotor_gap = kFallbackStatorRotorGap;
  a.stator_rotor_gap_source = "default";
  for (const char* key : {"analyzer_parameters.geometry.stator_rotor_gap",
                          "experimental_data.geometry.stator_rotor_gap",
                          "experimental_data.sample_detector_distance"}) {
    if (r.Has(key)) {
      a.stator_rotor_gap = r.Number(key);
      a.stator_rotor_gap_source = key;
      break;
    }
  }
}

void CheckExperimentalData(const ValueReader& r, const Config& c, const ReadOptions& options,
                           ProblemList& problems) {
  const ExperimentalData& e = c.experimental_data;
  for (const char* key :
       {"experimental_data.data_folder_path", "experimental_data.data_file_name"}) {
    const std::string value = r.String(key);
    const bool name_alone = !e.data_file_name.empty() && e.data_folder_path.empty();
    if (value.empty() && options.require_data_file && e.file_path.empty() && !name_alone) {
      problems.Add(key, fmt::format("is required for a fit (experimental_data needs file_path, "
                                    "or both data_folder_path and data_file_name){}",
                                    r.Line(key)));
    } else if (HasParentReference(value)) {
      problems.Add(key, fmt::format("must not contain '..', found \"{}\"{}", value, r.Line(key)));
    }
  }
  const std::string& tmpl = e.cache_filename_template;
  if (tmpl.find('/') != std::string::npos || tmpl.find("..") != std::string::npos) {
    problems.Add("experimental_data.cache_filename_template",
                 fmt::format("must be a plain file name (no '/' or '..'), found \"{}\"{}", tmpl,
                             r.Line("experimental_data.cache_filename_template")));
  }
  if (options.check_data_file_exists && !e.DataFile().empty() &&
      !std::filesystem::is_regular_file(e.DataFile())) {
    problems.Add("experimental_data.data_file_name",
                 fmt::format("data file {} does not exist{}", e.DataFile(),
                             r.Line("experimental_data.data_file_name")));
  }
}

void BuildPhiFiltering(const ValueReader& r, Config& c) {
  for (const auto& item : r.Find("phi_filtering.target_ranges")) {
    AngleRange range;
    range.min_angle =
        detail::ParseNumber(detail::ScalarField(item, "min_angle").value_or("")).value_or(0.0);
    range.max_angle =
        detail::ParseNumber(detail::ScalarField(item, "max_angle").value_or("")).value_or(0.0);
    range.description = detail::ScalarField(item, "description").value_or("");
    c.phi_filtering.target_ranges.push_back(range);
  }
}

void BuildLoggingModules(const ValueReader& r, Config& c) {
  const YAML::Node modules = r.Find("logging.modules");
  if (modules.IsMap()) {
    for (const auto& kv : modules) c.logging.modules[kv.first.Scalar()] = kv.second.Scalar();
  }
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// The path keys with ~ and environment variables expanded, as xpcsjax expands them.
void ExpandPaths(Config& c) {
  for (std::string* path :
       {&c.experimental_data.file_path, &c.experimental_data.data_folder_path,
        &c.experimental_data.data_file_name, &c.experimental_data.phi_angles_path,
        &c.experimental_data.cache_file_path, &c.optimization.streaming.checkpoint_dir,
        &c.output_directory, &c.output_base_directory, &c.logging.file_path}) {
    const std::string expanded = ExpandUserAndVariables(*path);
    if (expanded != *path) c.notes.push_back(fmt::format("path {} read as {}", *path, expanded));
    *path = expanded;
  }
}

// analysis_mode fills two fields: the name as written (lower-cased) and the mode.
void ReadAnalysisMode(const ValueReader& r, Config& c) {
  c.analysis_mode_name = Lower(r.String("analysis_mode"));
  c.analysis_mode = TryParseAnalysisMode(c.analysis_mode_name).value_or(AnalysisMode::kStatic);
}

// output.layout: auto is xpcsjax's layout for an xpcsjax config (it is what that user's
// scripts read), homodyne's for any other.
void ResolveOutputLayout(const std::string& xpcsjax_marker, Config& c) {
  if (c.output_layout != OutputLayout::kAuto) {
    c.output_layout_reason = "output.layout: " + std::string(ChoiceName(c.output_layout));
  } else if (xpcsjax_marker.empty()) {
    c.output_layout = OutputLayout::kHomodyne;
    c.output_layout_reason = "a homodyne config";
  } else {
    c.output_layout = OutputLayout::kXpcsjax;
    c.output_layout_reason = fmt::format("an xpcsjax config ({})", xpcsjax_marker);
  }
}

Config BuildConfig(YAML::Node root, const std::string& source, const ReadOptions& options) {
  if (!root.IsDefined() || root.IsNull()) ThrowBadInput("the configuration file is empty", source);
  if (!root.IsMap()) {
    ThrowBadInput(
        fmt::format("the top level must be a mapping of keys{}", detail::LineSuffix(root)), source);
  }
  Config c;
  c.source = source;
  ProblemList problems;
  c.legacy_flat_layout = detail::ConvertFlatLegacyLayout(root, problems);
  if (c.legacy_flat_layout) {
    c.notes.push_back("flat legacy layout converted to the nested layout");
  }
  const std::string xpcsjax_marker = detail::XpcsjaxConfigMarker(root);
  detail::ConvertEarlierKeys(root, c.earlier_keys);
  detail::CheckAgainstKeyTable(root, problems, c.accepted_keys_present,
                               options.strict ? nullptr : &c.ignored_keys);
  problems.ThrowIfAny(source);  // typed access below relies on a valid tree

  const ValueReader r(root);
  detail::ReadBoundFields(r, c);
  ExpandPaths(c);
  // What one key cannot say: the mode, fallback chains, cross-key checks, lists and maps.
  ReadAnalysisMode(r, c);
  ResolveOutputLayout(xpcsjax_marker, c);
  BuildAnalyzer(r, c, problems);
  CheckExperimentalData(r, c, options, problems);
  BuildPhiFiltering(r, c);
  detail::BuildParameters(r, c, problems);
  detail::BuildOptimization(r, c, problems);
  BuildLoggingModules(r, c);
  problems.ThrowIfAny(source);
  // Each compatibility note once, in the order of the first.
  std::vector<std::string> once;
  for (auto& note : c.earlier_keys) {
    if (std::find(once.begin(), once.end(), note) == once.end()) once.push_back(std::move(note));
  }
  c.earlier_keys = std::move(once);

  auto raw = std::make_shared<RawConfig>();
  raw->root = root;
  raw->source = source;
  c.raw = std::move(raw);
  return c;
}

}  // namespace

std::string ExpandUserAndVariables(const std::string& path) {
  std::string out;
  std::size_t i = 0;
  // A leading ~ or ~/…: the home folder (~user is left as written).
  if (!path.empty() && path[0] == '~' && (path.size() == 1 || path[1] == '/')) {
    if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
      out = home;
      i = 1;
    }
  }
  const auto is_name = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
  };
  while (i < path.size()) {
    if (path[i] != '$') {
      out += path[i++];
      continue;
    }
    std::size_t begin = i + 1, end = begin;
    bool braced = begin < path.size() && path[begin] == '{';
    if (braced) {
      end = path.find('}', begin + 1);
      if (end == std::string::npos) braced = false;  // no closing brace: kept as written
    } else {
      while (end < path.size() && is_name(path[end])) ++end;
    }
    const std::string name =
        braced ? path.substr(begin + 1, end - begin - 1) : path.substr(begin, end - begin);
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    if ((braced || end > begin) && value != nullptr) {
      out += value;
      i = braced ? end + 1 : end;
    } else {
      out += path[i++];  // an unset variable stays as written, as in os.path.expandvars
    }
  }
  return out;
}

std::string IgnoredKeysWarning(const Config& config) {
  std::string out = fmt::format(
      "{}: {} unknown key(s) ignored, with everything below them (--strict refuses them):",
      config.source, config.ignored_keys.size());
  for (const auto& key : config.ignored_keys) out += "\n  " + key;
  return out;
}

std::string OutputLayoutLine(const Config& config) {
  if (config.output_layout == OutputLayout::kXpcsjax) {
    return fmt::format(
        "xpcsjax's result files of an NLSQ fit (nlsq_result.json/.npz, parameters.json, "
        "analysis_results_nlsq.json, convergence_metrics.json) beside homodyne's: {}{}",
        config.output_layout_reason,
        config.output_layout_reason.rfind("output.layout", 0) == 0
            ? ""
            : "; output.layout: homodyne writes homodyne's alone");
  }
  return fmt::format("homodyne's result files: {}{}", config.output_layout_reason,
                     config.output_layout_reason.rfind("output.layout", 0) == 0
                         ? ""
                         : "; output.layout: xpcsjax adds xpcsjax's");
}

std::vector<std::string> UnusedSettingWarnings(const Config& config) {
  std::vector<std::string> out;
  const auto given = [&](std::string_view key) {
    return config.raw != nullptr && ConfigHasValue(config, key);
  };
  if (given("performance.strategy_override")) {
    out.push_back(fmt::format(
        "performance.strategy_override = {} is not used: the NLSQ data path follows the memory "
        "budget (--strategy in-core|streaming forces it)",
        ConfigString(config, "performance.strategy_override")));
  }
  if (given("optimization.nlsq.trust_region_scale") &&
      ConfigNumber(config, "optimization.nlsq.trust_region_scale") != 1.0) {
    out.push_back(fmt::format(
        "optimization.nlsq.trust_region_scale = {} is not used: Levenberg-Marquardt starts from "
        "its own damping",
        ConfigNumber(config, "optimization.nlsq.trust_region_scale")));
  }
  if (!config.optimization.nlsq.x_scale_map.empty()) {
    out.push_back(
        "optimization.nlsq.x_scale_map is not used: the local solver scales its steps by the "
        "Jacobian's column norms");
  }
  if (given("phi_filtering.tolerance") && ConfigNumber(config, "phi_filtering.tolerance") != 3.0) {
    out.push_back(fmt::format(
        "phi_filtering.tolerance = {} is not used: an angle is fitted when it lies in a "
        "target range (widen the ranges instead)",
        ConfigNumber(config, "phi_filtering.tolerance")));
  }
  return out;
}

Config DefaultConfig() {
  Config c;
  c.source = "defaults";
  const ValueReader r(YAML::Node(YAML::NodeType::Map));
  detail::ReadBoundFields(r, c);
  ReadAnalysisMode(r, c);
  ResolveOutputLayout("", c);
  c.analyzer.dt = kFallbackDt;
  c.analyzer.dt_source = "default";
  c.analyzer.stator_rotor_gap = kFallbackStatorRotorGap;
  c.analyzer.stator_rotor_gap_source = "default";
  ResolveParameters(c);
  return c;
}

Config ReadConfigString(const std::string& yaml_text, const std::string& source,
                        const ReadOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    ThrowBadInput(fmt::format("YAML syntax error at line {}, column {}: {}", e.mark.line + 1,
                              e.mark.column + 1, e.msg),
                  source);
  }
  try {
    return BuildConfig(root, source, options);
  } catch (const Error& e) {
    // Typed access reports key and line: the file is added here.
    if (e.kind() == ErrorKind::kBadInput && e.context().file.empty()) {
      ThrowBadInput(e.message(), source, e.context().key);
    }
    throw;
  } catch (const YAML::Exception& e) {  // defensive: validation should prevent this
    ThrowBadInput(fmt::format("unexpected YAML structure at line {}, column {}: {}",
                              e.mark.line + 1, e.mark.column + 1, e.msg),
                  source);
  }
}

Config ReadConfigFile(const std::string& path, const ReadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    ThrowBadInput("expected a configuration file (YAML or JSON), found a directory", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) ThrowBadInput("cannot open the configuration file", path);
  std::ostringstream text;
  text << in.rdbuf();
  return ReadConfigString(text.str(), path, options);
}

}  // namespace homodyne::config
