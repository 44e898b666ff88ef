// fitted_data.npz: homodyne's arrays and names (physics spec §5.2–5.3) as numpy.load reads
// them. One process, one angle at a time, like fitted_data.h5; the values are those of
// fitted_data.h5 bit for bit (outputs/fitted_arrays.h).
#include <algorithm>
#include <map>
#include <memory>
#include <system_error>

#include <fmt/format.h>

#include "config/config_bridge.h"
#include "core/atomic_file.h"
#include "io/dataset.h"
#include "model/kernel_factory.h"
#include "outputs/fitted_arrays.h"
#include "outputs/fitted_data.h"
#include "outputs/npz_file.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {

void WriteFittedDataNpz(const std::filesystem::path& path, const config::Config& cfg,
                        const std::string& data_file, const FittedModel& fitted,
                        const Logger& logger, double max_bytes) {
  namespace fs = std::filesystem;
  using outputs::FittedCube;
  if (FittedDataLevelOf(cfg) == FittedDataLevel::kNone) return;
  const io::DatasetMetadata meta =
      io::ReadDatasetMetadata(LoadOptionsFromConfig(cfg, data_file), Logger::Silent());
  const std::size_t n = meta.n_angles();
  const auto nf = static_cast<std::size_t>(meta.n_frames);
  const std::uint64_t nn = nf * nf;
  // The angle's data, its g1² and one output matrix.
  const double working = 8.0 * 3.0 * static_cast<double>(nn);
  if (working > max_bytes) {
    logger.Warn("{} not written: one angle's matrices would take {:.2f} GiB (limit {:.2f} GiB)",
                path.string(), working / (1ULL << 30), max_bytes / (1ULL << 30));
    return;
  }
  const std::vector<double> phi = meta.phi_values();
  FittedG1 model(cfg, meta, fitted);
  const std::vector<double>& time_axis = model.time_axis();
  const bool cmc = fitted.convention == FittedDataConvention::kCmc;
  const double one = cmc ? 0.0 : 1.0;

  // The large arrays go to .npy files beside the archive first (removed afterwards).
  struct Cube {
    const char* name;
    FittedCube which;
  };
  std::vector<Cube> cubes = {{"c2_theoretical_raw", FittedCube::kRaw},
                             {"c2_theoretical_scaled", FittedCube::kScaled},
                             {"residuals", FittedCube::kResiduals},
                             {"residuals_normalized", FittedCube::kNormalized}};
  if (!cmc) cubes.push_back({"c2_solver_scaled", FittedCube::kSolver});
  const fs::path parts = path.parent_path() / (path.filename().string() + ".parts");
  struct RemoveParts {
    fs::path dir;
    ~RemoveParts() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{parts};
  EnsureDirectory(parts);
  const std::vector<std::uint64_t> cube_shape{n, nf, nf};
  std::map<std::string, std::unique_ptr<outputs::NpyStream>> streams;
  const auto open = [&](const std::string& name) {
    streams[name] = std::make_unique<outputs::NpyStream>(parts / (name + ".npy"), cube_shape);
  };
  open("c2_exp");
  for (const Cube& c : cubes) open(c.name);
  std::vector<double> scaling, scaling_solver, slab(nn);
  for (std::size_t k = 0; k < n; ++k) {
    const std::vector<double> c = io::LoadAngleMatrix(meta, k);
    const std::vector<double> g = model.AtAngle(phi[k]);
    const outputs::PostHocScaling s = outputs::FitPostHocScaling(c, g, one, cmc);
    const double contrast = fitted.contrast.at(k), offset = fitted.offset.at(k);
    scaling.insert(scaling.end(), {s.a, s.b});
    scaling_solver.insert(scaling_solver.end(), {contrast, offset});
    streams["c2_exp"]->Append(c);
    for (const Cube& cube : cubes) {
      for (std::uint64_t p = 0; p < nn; ++p) {
        slab[p] = outputs::FittedCubeValue(cube.which, c[p], g[p], one, s, contrast, offset, cmc);
      }
      streams[cube.name]->Append(slab);
    }
  }
  for (auto& [name, stream] : streams) stream->Close();
  // homodyne's order of the members.
  // The N×N arrays compressed only as output.compress_hdf5 and compression_level say, as
  // fitted_data.h5's: deflate took ~90 % of a 23 × 200 job's time (6.3 of 7.2 s) for a file
  // a fifth smaller. Stored members read in numpy.load as deflated ones do.
  outputs::NpzArchive npz(path, cfg.Hdf5DeflateLevel());
  npz.AddDoubles("phi_angles", {n}, phi);
  npz.AddNpyFile("c2_exp", parts / "c2_exp.npy");
  npz.AddNpyFile("c2_theoretical_raw", parts / "c2_theoretical_raw.npy");
  npz.AddNpyFile("c2_theoretical_scaled", parts / "c2_theoretical_scaled.npy");
  npz.AddDoubles("per_angle_scaling", {n, 2}, scaling);
  if (!cmc) npz.AddDoubles("per_angle_scaling_solver", {n, 2}, scaling_solver);
  npz.AddNpyFile("residuals", parts / "residuals.npy");
  npz.AddNpyFile("residuals_normalized", parts / "residuals_normalized.npy");
  npz.AddDoubles("t1", {nf}, time_axis);
  npz.AddDoubles("t2", {nf}, time_axis);
  npz.AddDoubles("q", {1}, std::vector<double>{meta.q_physics});
  if (!cmc) npz.AddNpyFile("c2_solver_scaled", parts / "c2_solver_scaled.npy");
  npz.Commit();
}

}  // namespace homodyne
