#include "app/plots.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "config/config_bridge.h"
#include "config/key_paths.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "io/dataset.h"
#include "io/writers.h"
#include "synth/synthetic_dataset.h"

extern char** environ;

namespace homodyne {
namespace {

std::vector<double> Flatten(const std::vector<std::vector<double>>& matrices) {
  std::vector<double> out;
  for (const auto& m : matrices) out.insert(out.end(), m.begin(), m.end());
  return out;
}

// homodyne's plot fallbacks for physical parameters the config does not give.
double HomodyneFallback(const std::string& name) {
  static const std::map<std::string, double> kFallback = {
      {"D0", 100.0},          {"alpha", -0.5}, {"D_offset", 0.0},
      {"gamma_dot_t0", 0.01}, {"beta", 0.5},   {"gamma_dot_t_offset", 0.0},
      {"phi0", 0.0}};
  auto it = kFallback.find(name);
  return it != kFallback.end() ? it->second : 0.0;
}

}  // namespace

void WriteExperimentalPlotData(const std::filesystem::path& path, const config::Config& cfg,
                               const std::string& data_file) {
  const io::Dataset data = io::LoadDataset(LoadOptionsFromConfig(cfg, data_file), Logger::Silent());
  const auto n = static_cast<std::uint64_t>(data.c2.size());
  const auto nf = static_cast<std::uint64_t>(data.meta.n_frames);
  std::vector<io::NamedArray> arrays = {
      {"/c2_exp", {n, nf, nf}, Flatten(data.c2), "selected data, diagonal-corrected"},
      {"/t1", {nf}, data.meta.t, "seconds from 0"},
      {"/t2", {nf}, data.meta.t, "seconds from 0"},
      {"/phi_angles", {n}, data.meta.phi_values(), "degrees, normalised"},
      {"/q", {1}, {data.meta.q_physics}, "1/Angstrom"}};
  io::GroupAttributes attrs;
  attrs.strings.emplace_back("source", data.meta.file);
  EnsureDirectory(path.parent_path());
  io::WriteArraysFile(path.string(), arrays, attrs, io::ArrayStorage{cfg.Hdf5DeflateLevel()});
}

void SimulatedPlotOptions::Validate() const {
  if (!std::isfinite(contrast) || contrast <= 0.0) {
    ThrowBadInput(fmt::format("expected a contrast > 0, got {}", contrast), {}, "--contrast");
  }
  if (!std::isfinite(offset)) {
    ThrowBadInput(fmt::format("expected a finite offset, got {}", offset), {}, "--offset");
  }
  for (double p : phi_deg) {
    if (!std::isfinite(p)) ThrowBadInput("angles must be finite numbers", {}, "--phi-angles");
  }
}

void WriteSimulatedPlotData(const std::filesystem::path& path, const config::Config& cfg,
                            const std::string& data_file, const SimulatedPlotOptions& options,
                            const Logger& logger) {
  options.Validate();
  std::vector<double> phi = options.phi_deg;
  double q = cfg.analyzer.wavevector_q;
  int frames =
      cfg.analyzer.end_frame > 0 ? cfg.analyzer.end_frame - cfg.analyzer.start_frame + 1 : 0;
  if (phi.empty() || frames <= 0) {
    try {
      const io::DatasetMetadata meta =
          io::ReadDatasetMetadata(LoadOptionsFromConfig(cfg, data_file), Logger::Silent());
      if (phi.empty()) phi = meta.phi_values();
      if (frames <= 0) frames = static_cast<int>(meta.n_frames);
    } catch (const Error& e) {
      logger.Debug("simulated data: no data metadata ({})", e.what());
    }
  }
  if (phi.empty()) {
    for (int k = 0; k < 8; ++k) phi.push_back(180.0 * k / 7.0);  // numpy linspace(0, 180, 8)
    logger.Info("simulated data: angles {:.4g} (pass --phi-angles to choose)", fmt::join(phi, ","));
  }
  if (frames <= 0) {
    frames = 100;
    logger.Info("simulated data: {} frames (end_frame is -1 and the data file is not readable)",
                frames);
  }
  if (frames < 2 || frames > 20000) {
    ThrowBadInput(fmt::format("expected 2 to 20000 frames for the simulated data, got {}", frames),
                  cfg.source, config::keys::FrameWindowKey());
  }
  synth::SynthTruth model;
  model.mode = cfg.analysis_mode;
  model.geometry = GeometryFromConfig(cfg, q);
  model.geometry.Validate();
  for (const auto& p : cfg.parameters) {
    double v = p.initial_from_config ? p.initial : HomodyneFallback(p.name);
    if (auto it = options.overrides.find(p.name); it != options.overrides.end()) v = it->second;
    model.physical_names.push_back(p.name);
    model.physical.push_back(v);
  }
  model.phi_deg = phi;
  model.contrast.assign(phi.size(), options.contrast);
  model.offset.assign(phi.size(), options.offset);
  // homodyne's grid t = dt·[1..n]: the loader grid of n + 1 frames without row/column 0
  // (the other values are identical, the time floor only touches t = 0).
  model.frames = frames + 1;
  const auto full = synth::ModelMatrices(model);
  const auto n = static_cast<std::uint64_t>(frames);
  const std::uint64_t m = n + 1;
  std::vector<double> c2;
  c2.reserve(phi.size() * n * n);
  for (const auto& mat : full) {
    for (std::uint64_t i = 1; i < m; ++i) {
      c2.insert(c2.end(), mat.begin() + static_cast<std::ptrdiff_t>(i * m + 1),
                mat.begin() + static_cast<std::ptrdiff_t>((i + 1) * m));
    }
  }
  std::vector<double> t(n);
  for (std::uint64_t i = 0; i < n; ++i) t[i] = model.geometry.dt * static_cast<double>(i + 1);
  const auto n_phi = static_cast<std::uint64_t>(phi.size());
  std::vector<io::NamedArray> arrays = {
      {"/c2_simulated", {n_phi, n, n}, std::move(c2), "offset + contrast * g1^2, no fit"},
      {"/t1", {n}, t, "seconds, dt*[1..n]"},
      {"/t2", {n}, t, "seconds, dt*[1..n]"},
      {"/phi_angles", {n_phi}, phi, "degrees"},
      {"/q", {1}, {q}, "1/Angstrom (config wavevector_q)"},
      {"/parameters", {model.physical.size()}, model.physical, "physical parameters used"}};
  io::GroupAttributes attrs;
  std::string names;
  for (const auto& name : model.physical_names) names += (names.empty() ? "" : ",") + name;
  attrs.strings.emplace_back("parameter_names", names);
  attrs.strings.emplace_back("analysis_mode", cfg.analysis_mode_name);
  attrs.numbers.emplace_back("contrast", options.contrast);
  attrs.numbers.emplace_back("offset", options.offset);
  EnsureDirectory(path.parent_path());
  io::WriteArraysFile(path.string(), arrays, attrs, io::ArrayStorage{cfg.Hdf5DeflateLevel()});
}

std::filesystem::path FindHomodynePlot() {
  namespace fs = std::filesystem;
  auto executable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char* env = std::getenv("HOMODYNE_PLOT"); env != nullptr && *env != '\0') {
    return executable(env) ? fs::path(env) : fs::path();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / "homodyne-plot")) {
    return self.parent_path() / "homodyne-plot";
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string all = path;
    for (std::size_t a = 0; a <= all.size();) {
      std::size_t b = all.find(':', a);
      if (b == std::string::npos) b = all.size();
      const fs::path candidate = fs::path(all.substr(a, b - a)) / "homodyne-plot";
      if (b > a && executable(candidate)) return candidate;
      a = b + 1;
    }
  }
  return {};
}

bool RunHomodynePlot(const std::filesystem::path& results_dir, const std::vector<std::string>& args,
                     const Logger& logger) {
  const std::filesystem::path script = FindHomodynePlot();
  if (script.empty()) {
    logger.Warn(
        "plots skipped: homodyne-plot not found (beside homodyne, on PATH or in $HOMODYNE_PLOT); "
        "the results are complete, draw them later with homodyne-plot {}",
        results_dir.string());
    return false;
  }
  std::vector<std::string> argv_s = {script.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.push_back(results_dir.string());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, script.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    logger.Warn("plots skipped: cannot start {} ({})", script.string(), std::strerror(rc));
    return false;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      logger.Warn("plots: lost track of {} ({})", script.string(), std::strerror(errno));
      return false;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    logger.Warn(
        "plots skipped: Python's numpy/h5py/matplotlib are missing (apt-get install "
        "python3-matplotlib python3-h5py python3-numpy); the results are complete");
  } else {
    logger.Warn(
        "plots incomplete: {} failed ({}); the results are complete, rerun it by hand: {} {}",
        script.string(),
        WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status))
                          : fmt::format("signal {}", WTERMSIG(status)),
        script.string(), results_dir.string());
  }
  return false;
}

void WritePlotInputs(const std::filesystem::path& dir, const PlotRequest& request,
                     const config::Config& cfg, const std::string& data_file,
                     const Logger& logger) {
  if (request.experimental) {
    WriteExperimentalPlotData(dir / "plots" / "experimental_data.h5", cfg, data_file);
  }
  if (request.simulated) {
    WriteSimulatedPlotData(dir / "plots" / "simulated_data.h5", cfg, data_file,
                           request.simulated_options, logger);
  }
}

std::string DrawPlots(const std::filesystem::path& dir, const PlotRequest& request,
                      const Logger& logger) {
  if (!request.Any()) return "not requested";
  std::vector<std::string> args = {"--format", request.format, "--quiet"};
  if (request.PlotOnly()) {
    if (request.experimental) args.insert(args.end(), {"--only", "experimental"});
    if (request.simulated) args.insert(args.end(), {"--only", "simulated"});
  }
  if (!RunHomodynePlot(dir, args, logger)) return "failed";
  logger.Info("figures written by homodyne-plot under {}", dir.string());
  return "written";
}

}  // namespace homodyne
