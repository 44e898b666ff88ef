#include "synth/synthetic_dataset.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_bridge.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "core/huge_pages.h"
#include "core/library_versions.h"
#include "core/random.h"
#include "io/selection.h"
#include "io/writers.h"
#include "model/kernel_factory.h"

namespace homodyne::synth {

void SynthOptions::Validate() const {
  if (output.empty()) ThrowBadInput("an output file is required", {}, "--output");
  if (format != "aps_old" && format != "aps_u") {
    ThrowBadInput(fmt::format("unknown format '{}': expected aps_old or aps_u", format), {},
                  "--format");
  }
  if (lzf && format != "aps_u") {
    ThrowBadInput("LZF compression is only written in the aps_u layout", {}, "--lzf");
  }
  if (frames != 0 && (frames < 2 || frames > 100000)) {
    ThrowBadInput(fmt::format("expected 2 ≤ frames ≤ 100000, got {}", frames), {}, "--frames");
  }
  if (phi_deg.empty()) ThrowBadInput("at least one angle is needed", {}, "--angles");
  for (double p : phi_deg) {
    if (!std::isfinite(p)) ThrowBadInput("angles must be finite numbers", {}, "--angles");
  }
  if (!(noise >= 0.0) || !std::isfinite(noise)) {
    ThrowBadInput(fmt::format("expected a noise σ ≥ 0, got {}", noise), {}, "--noise");
  }
  if (threads < 1) ThrowBadInput("expected at least one thread", {}, "--threads");
  if (contrast && !std::isfinite(*contrast)) {
    ThrowBadInput(fmt::format("expected a finite contrast, got {}", *contrast), {}, "--contrast");
  }
  if (offset && !std::isfinite(*offset)) {
    ThrowBadInput(fmt::format("expected a finite offset, got {}", *offset), {}, "--offset");
  }
}

namespace {

// The model's values on the upper triangle of every angle (row i from column i on, rows in
// order, angles in order) into `values`.
void EvaluateUpperTriangles(const SynthTruth& truth, int threads, bool exact,
                            std::vector<double>& values) {
  const int n = truth.frames;
  const auto nn = static_cast<std::size_t>(n);
  const int n_angles = static_cast<int>(truth.phi_deg.size());
  const std::vector<double> t = io::LoaderTimeGrid(truth.geometry.dt, n);
  // One tile per (angle, row) over columns i..N−1 (diagonal included).
  const std::vector<double> zeros(nn, 0.0);
  std::vector<model::RowTile> tiles;
  tiles.reserve(static_cast<std::size_t>(n_angles) * nn);
  for (int k = 0; k < n_angles; ++k) {
    for (int i = 0; i < n; ++i) tiles.push_back({k, i, i, n - i, zeros.data(), nullptr, 1.0});
  }
  model::KernelOptions ko;
  ko.threads = threads;
  ko.exact_transcendentals = exact;  // a synthetic truth is the literal model, bit for bit
  const auto made = model::MakePassKernel(truth.mode, truth.geometry, t, truth.phi_deg, tiles, ko);
  const model::PassKernel& kernel = *made;
  std::vector<double> params = truth.contrast;
  params.insert(params.end(), truth.offset.begin(), truth.offset.end());
  params.insert(params.end(), truth.physical.begin(), truth.physical.end());
  ResizeOnHugePages(values, static_cast<std::size_t>(kernel.num_points()));
  kernel.EvaluateModel(params, values);
}

// An N×N symmetric matrix from its upper triangle (as EvaluateUpperTriangles lays it out):
// rows copied, the lower triangle mirrored block by block (a walk down a column of the
// whole matrix would touch a new cache line at every element).
void FillSymmetric(const double* upper, std::size_t n, double* m) {
  for (std::size_t i = 0; i < n; ++i) {
    std::copy(upper, upper + (n - i), m + i * n + i);
    upper += n - i;
  }
  constexpr std::size_t kBlock = 64;
  for (std::size_t ib = 0; ib < n; ib += kBlock) {
    const std::size_t ie = std::min(ib + kBlock, n);
    for (std::size_t jb = 0; jb <= ib; jb += kBlock) {
      for (std::size_t i = ib; i < ie; ++i) {
        const std::size_t je = std::min(jb + kBlock, i);
        for (std::size_t j = jb; j < je; ++j) m[i * n + j] = m[j * n + i];
      }
    }
  }
}

}  // namespace

std::vector<std::vector<double>> ModelMatrices(const SynthTruth& truth, int threads, bool exact) {
  const auto nn = static_cast<std::size_t>(truth.frames);
  std::vector<double> values;
  EvaluateUpperTriangles(truth, threads, exact, values);
  std::vector<std::vector<double>> out(truth.phi_deg.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    ResizeOnHugePages(out[k], nn * nn);
    FillSymmetric(values.data() + k * (nn * (nn + 1) / 2), nn, out[k].data());
  }
  return out;
}

void ModelMatrixInto(const SynthTruth& truth, bool exact, std::vector<double>& scratch,
                     std::vector<double>& matrix) {
  HOMODYNE_CHECK(truth.phi_deg.size() == 1, "ModelMatrixInto takes one angle");
  const auto nn = static_cast<std::size_t>(truth.frames);
  EvaluateUpperTriangles(truth, 1, exact, scratch);
  ResizeOnHugePages(matrix, nn * nn);
  FillSymmetric(scratch.data(), nn, matrix.data());
}

namespace {

SynthTruth ResolveTruth(const config::Config& cfg, const SynthOptions& o) {
  SynthTruth truth;
  truth.mode = cfg.analysis_mode;
  truth.geometry = GeometryFromConfig(cfg, cfg.analyzer.wavevector_q);
  truth.geometry.Validate();
  truth.physical_names = model::PhysicalParameterNames(truth.mode);
  for (const auto& p : cfg.parameters) truth.physical.push_back(p.initial);
  for (const auto& [name, value] : o.params) {
    const int idx = model::PhysicalParameterIndex(truth.mode, name);
    if (idx < 0) {
      ThrowBadInput(
          fmt::format("unknown parameter '{}' for analysis mode {}; expected one of {}", name,
                      model::ToString(truth.mode), fmt::join(truth.physical_names, ", ")),
          {}, "--param");
    }
    if (!std::isfinite(value)) {
      ThrowBadInput(fmt::format("value of {} is not finite", name), {}, "--param");
    }
    truth.physical[static_cast<std::size_t>(idx)] = value;
  }
  truth.phi_deg = o.phi_deg;
  truth.contrast.assign(o.phi_deg.size(), o.contrast.value_or(cfg.contrast.initial));
  truth.offset.assign(o.phi_deg.size(), o.offset.value_or(cfg.offset.initial));
  if (o.frames > 0) {
    truth.frames = o.frames;
  } else {
    truth.frames = cfg.analyzer.end_frame > 1 ? cfg.analyzer.end_frame : 200;
  }
  truth.noise = o.noise;
  truth.seed = o.seed;
  truth.format = o.format;
  return truth;
}

void AddNoise(std::vector<std::vector<double>>& matrices, int n, double sigma, std::uint64_t seed) {
  if (sigma == 0.0) return;
  const auto nn = static_cast<std::size_t>(n);
  for (std::size_t k = 0; k < matrices.size(); ++k) {
    CounterRng rng(seed, /*stream_a=*/k, /*stream_b=*/0x5359'4e54 /* "SYNT" */);
    auto& m = matrices[k];
    for (std::size_t i = 0; i < nn; ++i) {
      for (std::size_t j = i; j < nn; ++j) {
        const double e = sigma * rng.Normal();
        m[i * nn + j] += e;
        if (j != i) m[j * nn + i] = m[i * nn + j];
      }
    }
  }
}

io::GroupAttributes TruthAttributes(const SynthTruth& t) {
  io::GroupAttributes a;
  a.strings.emplace_back("analysis_mode", std::string(model::ToString(t.mode)));
  a.strings.emplace_back("format", t.format);
  a.strings.emplace_back("generator", fmt::format("homodyne-synth {}", Version()));
  a.strings.emplace_back("phi_deg", fmt::format("{}", fmt::join(t.phi_deg, ",")));
  a.numbers.emplace_back("q", t.geometry.q);
  a.numbers.emplace_back("L", t.geometry.L);
  a.numbers.emplace_back("dt", t.geometry.dt);
  a.numbers.emplace_back("frames", t.frames);
  a.numbers.emplace_back("noise", t.noise);
  a.numbers.emplace_back("seed", static_cast<double>(t.seed));
  for (std::size_t i = 0; i < t.physical.size(); ++i) {
    a.numbers.emplace_back(t.physical_names[i], t.physical[i]);
  }
  for (std::size_t k = 0; k < t.phi_deg.size(); ++k) {
    a.numbers.emplace_back(fmt::format("contrast_{}", k), t.contrast[k]);
    a.numbers.emplace_back(fmt::format("offset_{}", k), t.offset[k]);
  }
  return a;
}

// The frames (from --frames or the config's end_frame) and the memory the dataset takes: all
// its F×F matrices are held at once, and the writer adds one more.
void CheckMemory(const SynthTruth& t, bool from_option) {
  const std::string where = from_option
                                ? std::string("--frames")
                                : config::keys::Key(config::keys::kAnalyzerParameters, "end_frame");
  if (t.frames < 2 || t.frames > 100000) {
    ThrowBadInput(fmt::format("expected 2 ≤ frames ≤ 100000, got {}", t.frames), {}, where);
  }
  const double f = t.frames;
  const double bytes = 8.0 * f * f * static_cast<double>(t.phi_deg.size() + 1);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;
  const double ram = static_cast<double>(pages) * static_cast<double>(page);
  if (bytes > 0.8 * ram) {
    ThrowBadInput(fmt::format("{} angles × {} frames need {:.1f} GiB in memory, more than 80 % of "
                              "this machine's {:.1f} GiB; use fewer frames or angles",
                              t.phi_deg.size(), t.frames, bytes / (1ULL << 30), ram / (1ULL << 30)),
                  {}, where);
  }
}

}  // namespace

SynthTruth WriteSyntheticDataset(const config::Config& cfg, const SynthOptions& options) {
  options.Validate();
  if (std::filesystem::exists(options.output) && !options.force) {
    ThrowBadInput("the output file exists; pass --force to replace it", options.output, "--output");
  }
  const SynthTruth truth = ResolveTruth(cfg, options);
  CheckMemory(truth, options.frames > 0);
  auto matrices = ModelMatrices(truth, options.threads);
  AddNoise(matrices, truth.frames, truth.noise, truth.seed);
  const io::GroupAttributes attributes = TruthAttributes(truth);
  const std::size_t n_angles = truth.phi_deg.size();
  if (options.format == "aps_old") {
    io::WriteApsOld(options.output, std::vector<double>(n_angles, truth.geometry.q), truth.phi_deg,
                    matrices, attributes);
  } else {
    std::vector<std::int64_t> bins;
    for (std::size_t k = 0; k < n_angles; ++k) bins.push_back(static_cast<std::int64_t>(k) + 1);
    io::WriteApsU(options.output, {truth.geometry.q}, truth.phi_deg, bins, matrices, options.lzf,
                  attributes);
  }
  return truth;
}

SynthTruth ReadSyntheticTruth(const std::string& path) {
  const io::GroupAttributes a = io::ReadAttributes(path, io::kSynthGroup);
  auto str = [&](const std::string& key) -> std::string {
    for (const auto& [k, v] : a.strings) {
      if (k == key) return v;
    }
    ThrowBadInput("attribute missing", path, std::string(io::kSynthGroup) + "/" + key);
  };
  auto num = [&](const std::string& key) -> double {
    for (const auto& [k, v] : a.numbers) {
      if (k == key) return v;
    }
    ThrowBadInput("attribute missing", path, std::string(io::kSynthGroup) + "/" + key);
  };
  SynthTruth t;
  t.mode = model::ParseAnalysisMode(str("analysis_mode"));
  t.format = str("format");
  t.geometry = {num("q"), num("L"), num("dt")};
  t.frames = static_cast<int>(num("frames"));
  t.noise = num("noise");
  t.seed = static_cast<std::uint64_t>(num("seed"));
  t.physical_names = model::PhysicalParameterNames(t.mode);
  for (const auto& name : t.physical_names) t.physical.push_back(num(name));
  const std::string phi = str("phi_deg");
  for (std::size_t pos = 0; pos <= phi.size();) {
    const std::size_t comma = std::min(phi.find(',', pos), phi.size());
    t.phi_deg.push_back(std::stod(phi.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  for (std::size_t k = 0; k < t.phi_deg.size(); ++k) {
    t.contrast.push_back(num(fmt::format("contrast_{}", k)));
    t.offset.push_back(num(fmt::format("offset_{}", k)));
  }
  return t;
}

}  // namespace homodyne::synth
