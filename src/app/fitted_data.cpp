#include "homodyne/app/fitted_data.h"

#include "homodyne/app/config_bridge.h"
#include "homodyne/io/dataset.h"
#include "homodyne/io/writers.h"
#include "homodyne/synth/synthetic_dataset.h"

namespace homodyne {

void WriteFittedData(const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const nlsq::NlsqRunResult& result,
                     const Logger& logger, double max_bytes) {
  WriteFittedData(path, cfg, data_file,
                  FittedModel{result.report.analysis_mode, result.report.physical_values,
                              result.report.contrast, result.report.offset},
                  logger, max_bytes);
}

void WriteFittedData(const std::filesystem::path& path, const config::Config& cfg,
                     const std::string& data_file, const FittedModel& result, const Logger& logger,
                     double max_bytes) {
  // The size check comes before the data are read (from the metadata alone).
  const io::LoadOptions load = LoadOptionsFromConfig(cfg, data_file);
  {
    const io::DatasetMetadata meta = io::ReadDatasetMetadata(load, Logger::Silent());
    const auto nf = static_cast<double>(meta.n_frames);
    const double bytes = 8.0 * 7.0 * static_cast<double>(meta.n_angles()) * nf * nf;
    if (bytes > max_bytes) {
      logger.Warn("{} not written: its arrays would take {:.2f} GiB (limit {:.2f} GiB)",
                  path.string(), bytes / (1ULL << 30), max_bytes / (1ULL << 30));
      return;
    }
  }
  const io::Dataset data = io::LoadDataset(load, Logger::Silent());
  const std::size_t n = data.c2.size();
  const auto nf = static_cast<std::size_t>(data.meta.n_frames);
  // g1² on the loader grid at the fitted physics (contrast 1, offset 0).
  synth::SynthTruth model;
  model.mode = cfg.analysis_mode;
  model.geometry = GeometryFromConfig(cfg, data.meta.q_physics);
  model.physical = result.physical;
  model.phi_deg = data.meta.phi_values();
  model.contrast.assign(n, 1.0);
  model.offset.assign(n, 0.0);
  model.frames = static_cast<int>(nf);
  const auto g1sq = synth::ModelMatrices(model);

  const std::uint64_t nn = nf * nf;
  io::NamedArray exp{"/c2_exp", {n, nf, nf}, {}, "diagonal-corrected data"};
  io::NamedArray raw{"/c2_theoretical_raw", {n, nf, nf}, {}, "1 + g1^2"};
  io::NamedArray scaled{"/c2_theoretical_scaled", {n, nf, nf}, {}, "a_k * raw + b_k (post-hoc)"};
  io::NamedArray solver{"/c2_solver_scaled", {n, nf, nf}, {}, "offset_k + contrast_k * g1^2"};
  io::NamedArray posthoc{"/per_angle_scaling", {n, 2}, {}, "[a_k, b_k] post-hoc least squares"};
  io::NamedArray fitted{"/per_angle_scaling_solver", {n, 2}, {}, "[contrast_k, offset_k]"};
  io::NamedArray resid{"/residuals", {n, nf, nf}, {}, "c2_exp - c2_theoretical_scaled"};
  io::NamedArray resid_n{
      "/residuals_normalized", {n, nf, nf}, {}, "residuals / (0.05 * c2_exp), 0 where c2_exp == 0"};
  for (std::size_t k = 0; k < n; ++k) {
    const auto& c = data.c2[k];
    const auto& g = g1sq[k];
    // Post-hoc least squares c ≈ a·(1 + g) + b over all N² points.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::uint64_t p = 0; p < nn; ++p) {
      const double x = 1.0 + g[p];
      sx += x;
      sy += c[p];
      sxx += x * x;
      sxy += x * c[p];
    }
    const double m = static_cast<double>(nn);
    const double den = m * sxx - sx * sx;
    const double a = den != 0.0 ? (m * sxy - sx * sy) / den : 0.0;
    const double b = (sy - a * sx) / m;
    const double contrast = result.contrast.at(k);
    const double offset = result.offset.at(k);
    posthoc.data.insert(posthoc.data.end(), {a, b});
    fitted.data.insert(fitted.data.end(), {contrast, offset});
    for (std::uint64_t p = 0; p < nn; ++p) {
      const double r = 1.0 + g[p];
      const double s = a * r + b;
      exp.data.push_back(c[p]);
      raw.data.push_back(r);
      scaled.data.push_back(s);
      solver.data.push_back(offset + contrast * g[p]);
      resid.data.push_back(c[p] - s);
      resid_n.data.push_back(c[p] != 0.0 ? (c[p] - s) / (0.05 * c[p]) : 0.0);
    }
  }
  std::vector<io::NamedArray> arrays = {std::move(exp),    std::move(raw),     std::move(scaled),
                                        std::move(solver), std::move(posthoc), std::move(fitted),
                                        std::move(resid),  std::move(resid_n)};
  arrays.push_back({"/t1", {nf}, data.meta.t, "seconds from 0"});
  arrays.push_back({"/t2", {nf}, data.meta.t, "seconds from 0"});
  arrays.push_back({"/q", {1}, {data.meta.q_physics}, "1/Angstrom"});
  arrays.push_back({"/phi_angles", {n}, data.meta.phi_values(), "degrees, normalised"});
  io::GroupAttributes attrs;
  attrs.strings.emplace_back("analysis_mode", result.analysis_mode);
  attrs.strings.emplace_back("source", data.meta.file);
  io::WriteArraysFile(path.string(), arrays, attrs);
}

}  // namespace homodyne
