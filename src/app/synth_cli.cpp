#include "app/synth_cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/command_line.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::synth {
namespace {

std::vector<double> ParseAngles(const std::string& text) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    try {
      std::size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      ThrowBadInput(fmt::format("'{}' is not a number (expected e.g. \"0,45,90\")", item), {},
                    "--angles");
    }
    pos = comma + 1;
  }
  return out;
}

std::pair<std::string, double> ParseParam(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    ThrowBadInput(fmt::format("'{}' is not NAME=VALUE", text), {}, "--param");
  }
  try {
    std::size_t used = 0;
    const std::string value = text.substr(eq + 1);
    const double v = std::stod(value, &used);
    if (used != value.size()) throw std::invalid_argument(value);
    return {text.substr(0, eq), v};
  } catch (const std::exception&) {
    ThrowBadInput(fmt::format("'{}': the value is not a number", text), {}, "--param");
  }
}

}  // namespace

int SynthMain(int argc, char** argv) {
  CLI::App app{"homodyne-synth: write a synthetic XPCS two-time dataset from the homodyne model",
               "homodyne-synth"};
  std::string config_path;
  std::string angles = "0,45,90";
  std::vector<std::string> params;
  double contrast = 0, offset = 0;
  SynthOptions o;
  bool quiet = false;
  app.add_option("--config", config_path, "homodyne YAML config (mode, q, L, dt, parameters)")
      ->required();
  app.add_option("--output,-o", o.output, "HDF5 file to write")->required();
  app.add_option("--format", o.format, "aps_old (default) or aps_u");
  app.add_flag("--lzf", o.lzf, "aps_u: compress the matrices with LZF (HDF5 filter 32000)");
  app.add_option("--frames", o.frames, "frames N (default: config end_frame, else 200)");
  app.add_option("--angles", angles, "detector angles in degrees, e.g. \"0,45,90\"");
  app.add_option("--param", params, "physical parameter override NAME=VALUE (repeatable)");
  auto* c_opt = app.add_option("--contrast", contrast, "contrast of every angle");
  auto* o_opt = app.add_option("--offset", offset, "offset of every angle");
  app.add_option("--noise", o.noise, "Gaussian noise σ (default 0: the exact model)");
  app.add_option("--seed", o.seed, "noise seed");
  app.add_option("--threads", o.threads, "threads for the model evaluation");
  app.add_flag("--force", o.force, "replace an existing output file");
  app.add_flag("-q,--quiet", quiet, "print nothing on success");
  if (const auto code = TryParseCommandLine(app, [&] { app.parse(argc, argv); })) return *code;
  try {
    o.phi_deg = ParseAngles(angles);
    for (const auto& p : params) o.params.insert(ParseParam(p));
    if (c_opt->count() > 0) o.contrast = contrast;
    if (o_opt->count() > 0) o.offset = offset;
    config::ReadOptions ro;
    ro.require_data_file = false;
    const config::Config cfg = config::ReadConfigFile(config_path, ro);
    const SynthTruth t = WriteSyntheticDataset(cfg, o);
    if (!quiet) {
      std::string text =
          fmt::format("wrote {} ({}{}, {} angles × {} frames, {} mode)\n", o.output, t.format,
                      o.lzf ? ", LZF" : "", t.phi_deg.size(), t.frames, model::ToString(t.mode));
      text += fmt::format("  q = {} 1/Å, L = {} Å, dt = {} s, noise σ = {}, seed = {}\n",
                          t.geometry.q, t.geometry.L, t.geometry.dt, t.noise, t.seed);
      for (std::size_t i = 0; i < t.physical.size(); ++i) {
        text += fmt::format("  {:<20} {}\n", t.physical_names[i], t.physical[i]);
      }
      text += fmt::format("  contrast {}  offset {}  angles {}\n", fmt::join(t.contrast, ","),
                          fmt::join(t.offset, ","), fmt::join(t.phi_deg, ","));
      std::fputs(text.c_str(), stdout);
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<int>(ExitCodeOf(e));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "error: %s: out of memory building the dataset (use fewer frames or "
                 "angles)\n",
                 o.output.c_str());
    return static_cast<int>(ExitCode::kBadInput);
  }
}

}  // namespace homodyne::synth
