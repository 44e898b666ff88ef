// `homodyne-config`: writes commented templates and validates configuration files.
// No MPI environment is created: the tool is a plain serial program.
#include "app/config_tool.h"

#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "app/command_line.h"
#include "config/choices.h"
#include "config/config_reader.h"
#include "config/config_template.h"
#include "config/key_paths.h"
#include "config/key_table.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "model/parameter_layout.h"
#include "nlsq/xpcs_fit.h"

namespace homodyne::config {
namespace {

// The per-angle scaling each method will use, as the fits decide it
// (nlsq::LayoutOptionsFromConfig; static mode honours per_angle_mode too).
std::string PerAngleSummary(const Config& c) {
  const auto& ad = c.optimization.nlsq.anti_degeneracy;
  std::string nlsq = "individual (anti_degeneracy disabled)";
  if (ad.enable) {
    const model::LayoutOptions layout = nlsq::LayoutOptionsFromConfig(c);
    nlsq = config::ChoiceName(ad.per_angle_mode);
    if (layout.mode == model::PerAngleMode::kFourier) {
      nlsq += fmt::format(" (order {})", layout.fourier_order);
    } else if (layout.mode == model::PerAngleMode::kAuto) {
      nlsq += fmt::format(" (threshold {} angles)", layout.constant_scaling_threshold);
    }
  }
  return fmt::format("NLSQ {}; CMC {}", nlsq,
                     config::ChoiceName(c.optimization.cmc.per_angle_mode));
}

struct ToolOptions {
  std::string mode;
  std::string output;
  bool force = false;
  std::string validate;
  bool check_data = false;
  bool verbose = false;
  bool print_effective = false;
  bool strict = false;
  bool reference_doc = false;
};

int WriteTemplate(const ToolOptions& o) {
  const auto mode = TryParseAnalysisMode(o.mode);
  if (!mode)
    ThrowBadInput("unknown mode '" + o.mode + "' (use static, laminar_flow or two_component)", {},
                  "--mode");
  const std::string path = o.output.empty() ? DefaultTemplateFileName(*mode) : o.output;
  WriteConfigFile(path, ConfigTemplate(*mode), o.force);
  std::printf("wrote %s template to %s\n", std::string(ToString(*mode)).c_str(), path.c_str());
  return 0;
}

int Validate(const ToolOptions& o) {
  ReadOptions options;
  options.check_data_file_exists = o.check_data;
  options.strict = o.strict;
  // A template without its data path validates: the fit takes the file from --data-file.
  options.require_data_file = false;
  const Config config = ReadConfigFile(o.validate, options);
  if (!config.ignored_keys.empty()) {
    std::fprintf(stderr, "warning: %s\n", IgnoredKeysWarning(config).c_str());
  }
  for (const auto& note : config.earlier_keys) std::fprintf(stderr, "note: %s\n", note.c_str());
  for (const auto& w : UnusedSettingWarnings(config)) {
    std::fprintf(stderr, "warning: %s: %s\n", config.source.c_str(), w.c_str());
  }
  if (config.experimental_data.DataFile().empty()) {
    std::fprintf(stderr,
                 "warning: %s names no data file (experimental_data): a fit needs --data-file\n",
                 config.source.c_str());
  }
  std::fputs(FormatConfigSummary(config, o.verbose).c_str(), stdout);
  if (o.print_effective) {
    std::fputs("\n# effective configuration\n", stdout);
    std::fputs(EffectiveConfigYaml(config).c_str(), stdout);
  }
  return 0;
}

}  // namespace

void WriteConfigFile(const std::string& path, const std::string& text, bool overwrite) {
  if (!overwrite && std::filesystem::exists(path)) {
    ThrowBadInput("file exists; use --force to overwrite it", path);
  }
  WriteFileAtomically(path, text);
}

std::string FormatConfigSummary(const Config& c, bool verbose) {
  std::string out = fmt::format("configuration {}: valid{}\n", c.source,
                                c.legacy_flat_layout ? " (flat legacy layout)" : "");
  if (const std::string version = keys::Key(keys::kMetadata, "config_version");
      ConfigHasValue(c, version)) {
    out += fmt::format("  config version: {}\n", ConfigString(c, version));
  }
  out += fmt::format("  analysis mode : {} ({} physical parameters)\n", ToString(c.analysis_mode),
                     c.parameters.size());
  const std::string data = c.experimental_data.DataFile();
  if (data.empty()) {
    out += "  data file     : (not set)\n";
  } else {
    out += fmt::format("  data file     : {} ({})\n", data,
                       std::filesystem::is_regular_file(data) ? "exists" : "NOT FOUND");
  }
  out += fmt::format(
      "  frames        : {} .. {}, dt = {} s ({}), q = {} 1/A\n", c.analyzer.start_frame,
      c.analyzer.end_frame == -1 ? std::string("last") : std::to_string(c.analyzer.end_frame),
      c.analyzer.dt, c.analyzer.dt_source, c.analyzer.wavevector_q);
  out += fmt::format("  method        : {}\n", ToString(c.optimization.method));
  out += fmt::format("  per-angle mode: {}\n", PerAngleSummary(c));
  const StreamingOptions& st = c.optimization.streaming;
  const bool relative = std::filesystem::path(st.checkpoint_dir).is_relative();
  out += fmt::format("  checkpoints   : {}{}; {} (each data and config in a folder of its own)\n",
                     st.enable_checkpoints
                         ? "every " + std::to_string(st.checkpoint_frequency) + " iterations"
                         : std::string("only on a stop signal"),
                     st.resume_from_checkpoint ? ", resumed when this run's own exist" : "",
                     "in " + (relative ? (std::filesystem::path("<output dir>") / st.checkpoint_dir)
                                             .lexically_normal()
                                             .string()
                                       : st.checkpoint_dir));
  out += fmt::format("  output        : {}\n", OutputLayoutLine(c));
  out += fmt::format("  phi filtering : {}\n",
                     c.phi_filtering.enabled
                         ? fmt::format("{} range(s)", c.phi_filtering.target_ranges.size())
                         : std::string("off"));
  out += fmt::format("  {:<20} {:>14} {:>14} {:>14}  {}\n", "parameter", "initial", "min", "max",
                     "source");
  std::vector<EffectiveParameter> all = c.parameters;
  all.push_back(c.contrast);
  all.push_back(c.offset);
  for (const auto& p : all) {
    out +=
        fmt::format("  {:<20} {:>14.6g} {:>14.6g} {:>14.6g}  {}{}, {}\n", p.name, p.initial, p.min,
                    p.max, p.vary ? "" : "held at its initial value (NLSQ), ",
                    p.bounds_from_config ? "bounds from file" : "default bounds",
                    p.initial_from_config ? std::string("initial from file")
                    : p.name == "contrast" || p.name == "offset"
                        ? std::string("no initial value: NLSQ estimates it from the data, CMC "
                                      "starts at the midpoint")
                        : fmt::format("no initial value: NLSQ starts at {:g}, CMC at the midpoint",
                                      NlsqDefaultStart(p)));
  }
  for (const auto& note : c.notes) out += "  note: " + note + "\n";
  if (verbose && !c.accepted_keys_present.empty()) {
    out += "  keys accepted but not used by homodyne-hpc:\n";
    for (const auto& key : c.accepted_keys_present) out += "    " + key + "\n";
  }
  return out;
}

int HomodyneConfigMain(int argc, char** argv) {
  ToolOptions o;
  CLI::App app{"homodyne-config: write a commented configuration template or validate a file",
               "homodyne-config"};
  auto* mode =
      app.add_option("-m,--mode", o.mode, "write a template: static, laminar_flow or two_component")
          ->check(CLI::IsMember({"static", "laminar_flow", "two_component"}));
  app.add_option("-o,--output", o.output, "template file (default homodyne_<mode>_config.yaml)")
      ->needs(mode);
  app.add_flag("-f,--force", o.force, "overwrite an existing template file")->needs(mode);
  // -v is homodyne's short form of --validate (its users type `homodyne-config -v FILE`).
  auto* validate =
      app.add_option("-v,--validate", o.validate, "check a configuration file and print a summary");
  app.add_flag("--check-data", o.check_data, "with --validate: a missing data file is an error")
      ->needs(validate);
  app.add_flag("--strict", o.strict, "with --validate: unknown keys are errors, not warnings")
      ->needs(validate);
  app.add_flag("--verbose", o.verbose, "with --validate: list keys accepted but not used")
      ->needs(validate);
  bool interactive = false;
  app.add_flag("--interactive", interactive,
               "homodyne's questionnaire: not available here (a note; write a template with "
               "--mode and edit it)");
  app.add_flag("--print-effective", o.print_effective,
               "with --validate: print every key with its effective value")
      ->needs(validate);
  app.add_flag("--reference-doc", o.reference_doc,
               "print the Markdown configuration reference (docs/configuration.md)");
  bool migration_keys = false;
  app.add_flag("--migration-keys", migration_keys,
               "print the key table of docs/migrating.md (every key, earlier keys included, and "
               "what happens to it; scripts/update-migrating-keys.sh puts it in place)");
  mode->excludes(validate);
  app.footer("Exit codes: 0 ok, 2 bad input (invalid config, existing file without --force).");
  if (const auto code = TryParseCommandLine(app, [&] { app.parse(argc, argv); })) return *code;
  if (interactive) {
    std::fputs(
        "note: --interactive (homodyne's questionnaire) is not available in homodyne-config: "
        "write a commented template with --mode static|laminar_flow|two_component and edit it "
        "(docs/migrating.md)\n",
        stderr);
  }
  try {
    if (o.reference_doc) {
      std::fputs(RenderConfigReferenceMarkdown().c_str(), stdout);
      return 0;
    }
    if (migration_keys) {
      std::fputs(RenderMigrationKeyTableMarkdown().c_str(), stdout);
      return 0;
    }
    if (!o.mode.empty()) return WriteTemplate(o);
    if (!o.validate.empty()) return Validate(o);
    std::fputs("nothing to do: give --mode or --validate (see --help)\n", stderr);
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ExitCodeOf(e));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::kInternalError);
  }
}

}  // namespace homodyne::config
