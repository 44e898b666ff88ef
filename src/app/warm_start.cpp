#include "app/warm_start.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {

namespace {

// homodyne-hpc's analysis_results_nlsq.json beside the warm start's parameters.json, when
// there is one: its degeneracy.equivalent_minima (the separate, equally good minima the NLSQ
// run found). Optional: another tool's results, an older file or a malformed one give none.
std::vector<nlsq::EquivalentMinimum> EquivalentMinimaBeside(const std::filesystem::path& file) {
  std::vector<nlsq::EquivalentMinimum> out;
  std::ifstream in(file.parent_path() / "analysis_results_nlsq.json");
  if (!in) return out;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (!j.contains("degeneracy") || !j.at("degeneracy").contains("equivalent_minima")) return out;
    for (const auto& e : j.at("degeneracy").at("equivalent_minima")) {
      nlsq::EquivalentMinimum m;
      m.parameter = e.at("parameter").get<std::string>();
      m.value = e.at("value").get<double>();
      m.answer_value = e.at("answer_value").get<double>();
      m.objective = e.at("objective").get<double>();
      m.answer_objective = e.at("answer_objective").get<double>();
      out.push_back(std::move(m));
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

}  // namespace

nlsq::NlsqRunResult LoadNlsqWarmStart(const std::string& path, model::AnalysisMode mode) {
  namespace fs = std::filesystem;
  fs::path file = path;
  if (fs::is_directory(file)) {
    file = fs::exists(file / "nlsq" / "parameters.json") ? file / "nlsq" / "parameters.json"
                                                         : file / "parameters.json";
  }
  std::ifstream in(file);
  if (!in)
    ThrowBadInput("cannot read the NLSQ result (expected parameters.json)", file.string(),
                  "--nlsq-result");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    ThrowBadInput(fmt::format("not valid JSON: {}", e.what()), file.string(), "--nlsq-result");
  }
  nlsq::NlsqRunResult r;
  try {
    const auto& red = j.at("reduced_chi_squared");
    r.report.reduced_chi_squared = red.is_number() ? red.get<double>() : std::nan("");
    if (!(r.report.reduced_chi_squared <= 100.0)) {
      ThrowBadInput(fmt::format("reduced chi-squared {} > 100: not a usable warm start",
                                r.report.reduced_chi_squared),
                    file.string(), "reduced_chi_squared");
    }
    const auto& params = j.at("parameters");
    for (const auto& name : model::PhysicalParameterNames(mode)) {
      const auto& p = params.at(name);
      r.report.physical_names.push_back(name);
      r.report.physical_values.push_back(p.at("value").get<double>());
      const auto& u = p.at("uncertainty");
      // A parameter the NLSQ held has σ 0, which says nothing about its spread: unknown.
      const bool held =
          p.contains("vary") && p.at("vary").is_boolean() && !p.at("vary").get<bool>();
      r.report.physical_uncertainties.push_back(u.is_number() && !held ? u.get<double>()
                                                                       : std::nan(""));
    }
    if (j.contains("per_angle")) {  // homodyne-hpc's own files: the whole expanded vector
      const auto& pa = j.at("per_angle");
      for (const char* key : {"contrast", "offset"}) {
        for (const auto& e : pa.at(key)) {
          r.expanded.push_back(e.at("value").get<double>());
          const auto& u = e.at("uncertainty");
          r.expanded_uncertainty.push_back(u.is_number() ? u.get<double>() : std::nan(""));
        }
      }
      r.expanded.insert(r.expanded.end(), r.report.physical_values.begin(),
                        r.report.physical_values.end());
      r.expanded_uncertainty.insert(r.expanded_uncertainty.end(),
                                    r.report.physical_uncertainties.begin(),
                                    r.report.physical_uncertainties.end());
    }
  } catch (const nlohmann::json::exception& e) {
    ThrowBadInput(fmt::format("missing or malformed key: {}", e.what()), file.string(),
                  "--nlsq-result");
  }
  r.report.degeneracy.equivalent_minima = EquivalentMinimaBeside(file);
  return r;
}

}  // namespace homodyne
