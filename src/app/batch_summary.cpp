#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <fmt/format.h>

#include "app/batch.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "nlsq/fit_report.h"

namespace homodyne::batch {
namespace {

nlohmann::json OptionalNumber(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json();
}

std::optional<double> NumberOrNone(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<double>();
}

nlohmann::json RowToJson(const TaskRow& r) {
  // An array of pairs keeps the parameter order (a JSON object would sort the names).
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, value] : r.parameters) params[name] = value;
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [name, value] : r.parameters) order.push_back(name);
  return {{"index", r.index},
          {"task", r.name},
          {"status", r.status},
          {"exit_code", r.exit_code},
          {"error", r.error},
          {"method", config::ToString(r.method)},
          {"data_file", r.data_file},
          {"q", OptionalNumber(r.q)},
          {"output_dir", r.output_dir},
          {"ranks", r.ranks},
          {"group", r.group},
          {"wall_seconds", r.wall_seconds},
          {"chi2", OptionalNumber(r.chi2)},
          {"reduced_chi2", OptionalNumber(r.reduced_chi2)},
          {"convergence", r.convergence},
          {"cmc_max_rhat", OptionalNumber(r.cmc_max_rhat)},
          {"parameters", params},
          {"parameter_order", order}};
}

TaskRow RowFromJson(const nlohmann::json& j) {
  TaskRow r;
  r.index = j.at("index").get<int>();
  r.name = j.at("task").get<std::string>();
  r.status = j.at("status").get<std::string>();
  r.exit_code = j.at("exit_code").get<int>();
  r.error = j.at("error").get<std::string>();
  r.method = config::ParseFitMethod(j.at("method").get<std::string>(), "method");
  r.data_file = j.at("data_file").get<std::string>();
  r.q = NumberOrNone(j, "q");
  r.output_dir = j.at("output_dir").get<std::string>();
  r.ranks = j.at("ranks").get<int>();
  r.group = j.at("group").get<int>();
  r.wall_seconds = j.at("wall_seconds").get<double>();
  r.chi2 = NumberOrNone(j, "chi2");
  r.reduced_chi2 = NumberOrNone(j, "reduced_chi2");
  r.convergence = j.at("convergence").get<std::string>();
  r.cmc_max_rhat = NumberOrNone(j, "cmc_max_rhat");
  const auto& params = j.at("parameters");
  if (j.contains("parameter_order")) {
    for (const auto& name : j.at("parameter_order")) {
      r.parameters.emplace_back(name.get<std::string>(),
                                params.at(name.get<std::string>()).get<double>());
    }
  } else {
    for (const auto& [name, value] : params.items())
      r.parameters.emplace_back(name, value.get<double>());
  }
  return r;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string CsvNumber(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? fmt::format("{:.17g}", *v) : std::string();
}

}  // namespace

std::string TaskRowJson(const TaskRow& row) { return RowToJson(row).dump(); }
TaskRow TaskRowFromJson(const std::string& json_text) {
  return RowFromJson(nlohmann::json::parse(json_text));
}

std::filesystem::path CompletionMarkerPath(const std::string& output_dir) {
  return std::filesystem::path(output_dir) / "batch_task_done.json";
}

void WriteCompletionMarker(const PreparedTask& task, const TaskRow& row) {
  const nlohmann::json j = {
      {"fingerprint", task.fingerprint}, {"finished", IsoTimestampNow()}, {"row", RowToJson(row)}};
  WriteFileAtomically(CompletionMarkerPath(task.spec.output_dir), j.dump(2) + "\n");
}

std::optional<TaskRow> ReadCompletionMarker(const PreparedTask& task) {
  std::ifstream in(CompletionMarkerPath(task.spec.output_dir));
  if (!in) return std::nullopt;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.at("fingerprint").get<std::string>() != task.fingerprint) return std::nullopt;
    TaskRow r = RowFromJson(j.at("row"));
    if (r.status != "ok") return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // unreadable marker: run the task again
  }
}

std::string BatchSummaryCsv(const std::vector<TaskRow>& rows) {
  std::vector<std::string> params;  // union, first-seen order
  for (const auto& r : rows) {
    for (const auto& [name, v] : r.parameters) {
      if (std::find(params.begin(), params.end(), name) == params.end()) params.push_back(name);
    }
  }
  std::ostringstream os;
  os << "task,status,exit_code,method,ranks,group,wall_seconds,chi2,reduced_chi2,convergence,"
        "cmc_max_rhat,q";
  for (const auto& p : params) os << ',' << CsvField(p);
  os << ",data_file,output_dir,error\n";
  for (const auto& r : rows) {
    os << CsvField(r.name) << ',' << r.status << ',' << r.exit_code << ','
       << config::ToString(r.method) << ',' << r.ranks << ',' << r.group << ','
       << fmt::format("{:.3f}", r.wall_seconds) << ',' << CsvNumber(r.chi2) << ','
       << CsvNumber(r.reduced_chi2) << ',' << CsvField(r.convergence) << ','
       << CsvNumber(r.cmc_max_rhat) << ',' << CsvNumber(r.q);
    for (const auto& p : params) {
      std::optional<double> v;
      for (const auto& [name, value] : r.parameters) {
        if (name == p) v = value;
      }
      os << ',' << CsvNumber(v);
    }
    os << ',' << CsvField(r.data_file) << ',' << CsvField(r.output_dir) << ',' << CsvField(r.error)
       << '\n';
  }
  return os.str();
}

void WriteBatchSummary(const std::filesystem::path& root, const std::string& batch_file,
                       const std::vector<TaskRow>& rows, const BatchTotals& totals) {
  nlohmann::json j;
  j["batch_file"] = batch_file;
  j["created"] = IsoTimestampNow();
  j["world_ranks"] = totals.world_ranks;
  j["group_classes"] = nlohmann::json::array();
  for (const auto& c : totals.classes) {
    j["group_classes"].push_back(
        {{"group_size", c.group_size}, {"groups", c.groups}, {"tasks", c.tasks}});
  }
  j["wall_seconds"] = totals.wall_seconds;
  j["exit_code"] = totals.exit_code;
  nlohmann::json counts = {{"ok", 0}, {"failed", 0}, {"skipped", 0}};
  j["tasks"] = nlohmann::json::array();
  for (const auto& r : rows) {
    counts[r.status] = counts[r.status].get<int>() + 1;
    j["tasks"].push_back(RowToJson(r));
  }
  j["counts"] = counts;
  EnsureDirectory(root);
  WriteFileAtomically(root / "batch_summary.json", j.dump(2) + "\n");
  WriteFileAtomically(root / "batch_summary.csv", BatchSummaryCsv(rows));
}

}  // namespace homodyne::batch
