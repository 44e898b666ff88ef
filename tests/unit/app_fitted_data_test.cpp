// fitted_data.h5, written one angle at a time (ArrayFileWriter slabs, LoadAngleMatrixInto): every
// array checked against values computed here independently — the loader's whole-file
// matrices, the model of all angles at once, homodyne's post-hoc least squares — and the
// writer's atomicity (no file, no temporary file after an error or a skipped write).
#include "outputs/fitted_data.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "config/config_reader.h"
#include "core/errors.h"
#include "h5_read.h"
#include "io/dataset.h"
#include "io/writers.h"
#include "synth/synthetic_dataset.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;

std::vector<double> Read(const fs::path& file, const std::string& path,
                         std::vector<hsize_t>* dims = nullptr) {
  return testing::ReadWholeDataset(file.string(), path, dims);
}

constexpr int kFrames = 7;
constexpr int kAngles = 3;

// A legacy-layout file of three angles, 7 × 7 frames, and a static config that selects all.
// Angle 1 has a zero pair (0, 6) and (6, 0); angle 2 lies near 3, so that a least-squares
// offset on g1² is far above 1.5 (the CMC convention clips it).
config::Config MakeDataset(const fs::path& dir, const std::string& level = "full") {
  std::vector<std::vector<double>> matrices;
  for (int k = 0; k < kAngles; ++k) {
    std::vector<double> m(kFrames * kFrames);
    for (int i = 0; i < kFrames; ++i) {
      for (int j = 0; j < kFrames; ++j) {
        m[static_cast<std::size_t>(i * kFrames + j)] =
            (k == 2 ? 3.0 : 1.0) *
            (1.0 + (0.3 + 0.05 * k) * std::exp(-0.2 * std::abs(i - j)) + 0.002 * (i + j));
      }
    }
    if (k == 1) m[0 * kFrames + 6] = m[6 * kFrames + 0] = 0.0;
    matrices.push_back(std::move(m));
  }
  io::WriteApsOld((dir / "data.h5").string(), {0.0054, 0.0054, 0.0054}, {0.0, 60.0, 120.0},
                  matrices);
  const std::string yaml =
      "analysis_mode: static\n"
      "analyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n  end_frame: 7\n"
      "  scattering: {wavevector_q: 0.0054}\n"
      "experimental_data:\n  data_folder_path: " +
      dir.string() + "\n  data_file_name: data.h5\noutput: {fitted_data: " + level + "}\n";
  return config::ReadConfigString(yaml, "fitted.yaml");
}

FittedModel Model(FittedDataConvention convention = FittedDataConvention::kNlsq) {
  return FittedModel{
      "static", {120.0, -0.2, 5.0}, {0.30, 0.35, 0.40}, {1.00, 1.01, 0.99}, convention};
}

// The file's data and the model of all angles in one evaluation, computed here.
struct Expected {
  io::Dataset data;
  std::vector<std::vector<double>> g1sq;
};

Expected Independent(const fs::path& dir, const config::Config& cfg, const FittedModel& fitted) {
  io::LoadOptions load;
  load.path = (dir / "data.h5").string();
  load.target_q = 0.0054;
  load.start_frame = 1;
  load.end_frame = kFrames;
  load.dt = 0.1;
  Expected e{io::LoadDataset(load, Logger::Silent()), {}};
  synth::SynthTruth truth;
  truth.mode = model::AnalysisMode::kStatic;
  truth.geometry = model::Geometry{e.data.meta.q_physics, cfg.analyzer.stator_rotor_gap, 0.1};
  truth.physical = fitted.physical;
  truth.phi_deg = e.data.meta.phi_values();
  truth.contrast.assign(kAngles, 1.0);
  truth.offset.assign(kAngles, 0.0);
  truth.frames = kFrames;
  e.g1sq = synth::ModelMatrices(truth);
  return e;
}

TEST(FittedData, EveryArrayMatchesAnIndependentEvaluation) {
  const testing::ScopedTempDir tmp("fitted_arrays");
  const fs::path dir = tmp.path();
  const config::Config cfg = MakeDataset(dir);
  const FittedModel fitted = Model();
  const fs::path out = dir / "fitted_data.h5";
  WriteFittedData(out, cfg, "", fitted, Logger::Silent());
  ASSERT_TRUE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));

  // The whole-file loader and the model of all angles in one evaluation.
  const Expected expected = Independent(dir, cfg, fitted);
  const io::Dataset& data = expected.data;
  const auto& g1sq = expected.g1sq;
  ASSERT_EQ(data.c2.size(), static_cast<std::size_t>(kAngles));

  std::vector<hsize_t> dims;
  const auto exp = Read(out, "/c2_exp", &dims);
  EXPECT_EQ(dims, (std::vector<hsize_t>{kAngles, kFrames, kFrames}));
  const auto raw = Read(out, "/c2_theoretical_raw");
  const auto scaled = Read(out, "/c2_theoretical_scaled");
  const auto solver = Read(out, "/c2_solver_scaled");
  const auto resid = Read(out, "/residuals");
  const auto resid_n = Read(out, "/residuals_normalized");
  const auto posthoc = Read(out, "/per_angle_scaling", &dims);
  EXPECT_EQ(dims, (std::vector<hsize_t>{kAngles, 2}));
  const auto solver_scaling = Read(out, "/per_angle_scaling_solver");
  const std::size_t nn = kFrames * kFrames;
  std::vector<double> buffer, matrix;
  for (std::size_t k = 0; k < kAngles; ++k) {
    // Each angle read alone gives the bits of the whole-file load.
    io::LoadAngleMatrixInto(data.meta, k, buffer, matrix);
    EXPECT_EQ(matrix, data.c2[k]);
    const double a = posthoc[2 * k], b = posthoc[2 * k + 1];
    EXPECT_EQ(solver_scaling[2 * k], fitted.contrast[k]);
    EXPECT_EQ(solver_scaling[2 * k + 1], fitted.offset[k]);
    // (a, b) solve the least-squares normal equations of c2_exp ≈ a·raw + b.
    double sr = 0, srx = 0, sc = 0;
    for (std::size_t p = 0; p < nn; ++p) {
      const std::size_t at = k * nn + p;
      const double c = data.c2[k][p], g = g1sq[k][p];
      ASSERT_EQ(exp[at], c);
      ASSERT_NEAR(raw[at], 1.0 + g, 1e-15);
      ASSERT_NEAR(scaled[at], a * raw[at] + b, 1e-14);
      ASSERT_NEAR(solver[at], fitted.offset[k] + fitted.contrast[k] * g, 1e-15);
      ASSERT_NEAR(resid[at], c - scaled[at], 1e-15);
      ASSERT_NEAR(resid_n[at], c != 0.0 ? (c - scaled[at]) / (0.05 * c) : 0.0, 1e-12);
      sr += resid[at];
      srx += resid[at] * raw[at];
      sc += c;
    }
    EXPECT_NEAR(sr, 0.0, 1e-12 * sc);
    EXPECT_NEAR(srx, 0.0, 1e-12 * sc);
    EXPECT_GT(a, 0.0);  // the data rise with g1² (a real fit, not a degenerate one)
  }
  const auto t1 = Read(out, "/t1");
  EXPECT_EQ(t1, data.meta.t);
  EXPECT_EQ(Read(out, "/t2"), data.meta.t);
  EXPECT_EQ(Read(out, "/q"), std::vector<double>{data.meta.q_physics});
  EXPECT_EQ(Read(out, "/phi_angles"), data.meta.phi_values());
  const io::GroupAttributes attrs = io::ReadAttributes(out.string(), "/");
  bool mode = false;
  for (const auto& [name, value] : attrs.strings)
    mode |= name == "analysis_mode" && value == "static";
  EXPECT_TRUE(mode);
}

// output.fitted_data: model (the default) holds the data, the model and the small arrays
// with the bits of the full file, and the four other arrays are the multiply-adds
// docs/outputs.md gives, bit for bit, in both conventions; none writes no file.
TEST(FittedData, ModelLevelHoldsWhatTheFullFileIsDerivedFrom) {
  for (const FittedDataConvention convention :
       {FittedDataConvention::kNlsq, FittedDataConvention::kCmc}) {
    const testing::ScopedTempDir tmp("fitted_levels");
    const fs::path dir = tmp.path();
    const config::Config full_cfg = MakeDataset(dir, "full");
    const config::Config model_cfg = MakeDataset(dir, "model");
    EXPECT_EQ(FittedDataLevelOf(config::ReadConfigString(
                  "analysis_mode: static\n"
                  "experimental_data: {data_folder_path: ., data_file_name: d.h5}\n",
                  "c.yaml")),
              FittedDataLevel::kModel);
    const FittedModel fitted = Model(convention);
    const fs::path full = dir / "full.h5", model = dir / "model.h5";
    WriteFittedData(full, full_cfg, "", fitted, Logger::Silent());
    WriteFittedData(model, model_cfg, "", fitted, Logger::Silent());
    for (const char* name : {"/c2_exp", "/c2_theoretical_raw", "/per_angle_scaling",
                             "/per_angle_scaling_solver", "/t1", "/t2", "/q", "/phi_angles"}) {
      EXPECT_EQ(Read(model, name), Read(full, name)) << name;
    }
    for (const char* name :
         {"/c2_theoretical_scaled", "/c2_solver_scaled", "/residuals", "/residuals_normalized"}) {
      EXPECT_FALSE(testing::DatasetExists(model.string(), name)) << name;
    }
    const bool cmc = convention == FittedDataConvention::kCmc;
    const auto c = Read(model, "/c2_exp"), raw = Read(model, "/c2_theoretical_raw");
    const auto ab = Read(model, "/per_angle_scaling");
    const auto solver = Read(model, "/per_angle_scaling_solver");
    const auto scaled = Read(full, "/c2_theoretical_scaled");
    const auto solver_scaled = Read(full, "/c2_solver_scaled");
    const auto resid = Read(full, "/residuals"), resid_n = Read(full, "/residuals_normalized");
    const std::size_t nn = kFrames * kFrames;
    for (std::size_t k = 0; k < kAngles; ++k) {
      const double a = ab[2 * k], b = ab[2 * k + 1];
      const double contrast = solver[2 * k], offset = solver[2 * k + 1];
      for (std::size_t p = 0; p < nn; ++p) {
        const std::size_t at = k * nn + p;
        const double g = cmc ? raw[at] : raw[at] - 1.0;
        ASSERT_EQ(scaled[at], a * raw[at] + b);
        ASSERT_NEAR(solver_scaled[at], offset + contrast * g, 1e-15);
        ASSERT_EQ(resid[at], c[at] - (a * raw[at] + b));
        const double r = c[at] - (a * raw[at] + b);
        ASSERT_EQ(resid_n[at], c[at] != 0.0 ? r / (0.05 * c[at]) : (cmc ? r / 0.05 : 0.0));
      }
    }
    const fs::path none = dir / "none.h5";
    WriteFittedData(none, MakeDataset(dir, "none"), "", fitted, Logger::Silent());
    EXPECT_FALSE(fs::exists(none));
    EXPECT_THROW(MakeDataset(dir, "some"), Error);
  }
}

// homodyne's cmc/fitted_data.npz: raw = g1², (a, b) on g1² clipped to [0.01, 1] × [0.5, 1.5],
// residuals normalised by 0.05·1 where the data are 0; the solver arrays as for NLSQ.
TEST(FittedData, CmcConventionIsHomodynes) {
  const testing::ScopedTempDir tmp("fitted_cmc");
  const fs::path dir = tmp.path();
  const config::Config cfg = MakeDataset(dir);
  const FittedModel fitted = Model(FittedDataConvention::kCmc);
  const fs::path out = dir / "fitted_data.h5";
  WriteFittedData(out, cfg, "", fitted, Logger::Silent());
  const Expected expected = Independent(dir, cfg, fitted);
  const auto raw = Read(out, "/c2_theoretical_raw");
  const auto scaled = Read(out, "/c2_theoretical_scaled");
  const auto solver = Read(out, "/c2_solver_scaled");
  const auto resid = Read(out, "/residuals");
  const auto resid_n = Read(out, "/residuals_normalized");
  const auto posthoc = Read(out, "/per_angle_scaling");
  const std::size_t nn = kFrames * kFrames;
  int clipped = 0, zeros = 0;
  for (std::size_t k = 0; k < kAngles; ++k) {
    const auto& c = expected.data.c2[k];
    const auto& g = expected.g1sq[k];
    // Least squares of c on g from the centred moments.
    double mg = 0, mc = 0;
    for (std::size_t p = 0; p < nn; ++p) {
      mg += g[p] / nn;
      mc += c[p] / nn;
    }
    double cov = 0, var = 0;
    for (std::size_t p = 0; p < nn; ++p) {
      cov += (g[p] - mg) * (c[p] - mc);
      var += (g[p] - mg) * (g[p] - mg);
    }
    const double a_ls = cov / var, b_ls = mc - a_ls * mg;
    const double a = std::clamp(a_ls, 0.01, 1.0), b = std::clamp(b_ls, 0.5, 1.5);
    clipped += (a != a_ls || b != b_ls) ? 1 : 0;
    EXPECT_NEAR(posthoc[2 * k], a, 1e-9 * std::abs(a));
    EXPECT_NEAR(posthoc[2 * k + 1], b, 1e-9 * std::abs(b));
    for (std::size_t p = 0; p < nn; ++p) {
      const std::size_t at = k * nn + p;
      ASSERT_NEAR(raw[at], g[p], 1e-15);
      ASSERT_NEAR(scaled[at], posthoc[2 * k] * g[p] + posthoc[2 * k + 1], 1e-14);
      ASSERT_NEAR(solver[at], fitted.offset[k] + fitted.contrast[k] * g[p], 1e-15);
      ASSERT_NEAR(resid[at], c[p] - scaled[at], 1e-15);
      zeros += c[p] == 0.0 ? 1 : 0;
      ASSERT_NEAR(resid_n[at], (c[p] - scaled[at]) / (0.05 * (c[p] != 0.0 ? c[p] : 1.0)), 1e-12);
    }
  }
  EXPECT_GE(clipped, 1);  // angle 2's offset
  EXPECT_EQ(zeros, 2);    // angle 1's pair
}

TEST(FittedData, SkippedWhenOneAngleExceedsTheLimitAndNothingIsLeft) {
  const testing::ScopedTempDir tmp("fitted_limit");
  const fs::path dir = tmp.path();
  const config::Config cfg = MakeDataset(dir);
  const fs::path out = dir / "fitted_data.h5";
  // One angle needs 4 matrices of 7 × 7 doubles (1568 bytes, uncompressed on one process): a
  // limit below that skips it.
  WriteFittedData(out, cfg, "", Model(), Logger::Silent(), 1500.0);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
  WriteFittedData(out, cfg, "", Model(), Logger::Silent(), 1600.0);
  EXPECT_TRUE(fs::exists(out));
}

TEST(FittedData, BadDataFileLeavesNoOutput) {
  const testing::ScopedTempDir tmp("fitted_bad");
  const fs::path dir = tmp.path();
  const config::Config cfg = MakeDataset(dir);
  const fs::path out = dir / "fitted_data.h5";
  const std::string missing = (dir / "missing.h5").string();
  try {
    WriteFittedData(out, cfg, missing, Model(), Logger::Silent());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.h5"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

TEST(ArrayFileWriter, SlabsLandWhereTheyBelongAndCommitPublishes) {
  const testing::ScopedTempDir tmp("fitted_slabs");
  const fs::path dir = tmp.path();
  const fs::path out = dir / "a.h5";
  {
    io::ArrayFileWriter w(out.string());
    w.Create("/cube", {3, 2, 2}, "three 2 x 2 slabs");
    w.Write({"/line", {4}, {1, 2, 3, 4}, ""});
    // Out of order: slab 2, then 0, then 1.
    w.WriteSlab("/cube", 2, std::vector<double>{20, 21, 22, 23});
    w.WriteSlab("/cube", 0, std::vector<double>{0, 1, 2, 3});
    EXPECT_FALSE(fs::exists(out));  // not before Commit
    w.WriteSlab("/cube", 1, std::vector<double>{10, 11, 12, 13});
    w.Commit({{{"origin", "test"}}, {{"version", 2.0}}});
    EXPECT_TRUE(fs::exists(out));
  }
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
  EXPECT_EQ(Read(out, "/cube"), (std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}));
  EXPECT_EQ(Read(out, "/line"), (std::vector<double>{1, 2, 3, 4}));
  const io::GroupAttributes attrs = io::ReadAttributes(out.string(), "/");
  ASSERT_EQ(attrs.numbers.size(), 1u);
  EXPECT_EQ(attrs.numbers[0].second, 2.0);
}

TEST(ArrayFileWriter, UncommittedOrMisusedWriterLeavesNothing) {
  const testing::ScopedTempDir tmp("fitted_uncommitted");
  const fs::path dir = tmp.path();
  const fs::path out = dir / "a.h5";
  {
    io::ArrayFileWriter w(out.string());
    w.Create("/cube", {2, 3}, "");
    EXPECT_TRUE(fs::exists(out.string() + ".tmp"));
    try {
      w.WriteSlab("/cube", 0, std::vector<double>{1, 2});  // a slab has 3 values
      FAIL() << "expected an internal error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    }
    EXPECT_THROW(w.WriteSlab("/cube", 2, std::vector<double>{1, 2, 3}), Error);  // index 2 of 2
    EXPECT_THROW(w.WriteSlab("/other", 0, std::vector<double>{1}), Error);       // not created
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

// Compressed storage (shuffle + deflate): the values come back bit for bit, the chunks hold
// whole rows, ≤ 512 KiB (one process: also across slabs), and arrays under 8192 values, 1-D
// arrays and level 0 stay contiguous.
TEST(ArrayFileWriter, CompressedArraysKeepTheirBitsInChunksOfWholeRows) {
  ASSERT_TRUE(io::DeflateAvailable());  // Debian's HDF5 has zlib
  const testing::ScopedTempDir tmp("fitted_deflate");
  const fs::path dir = tmp.path();
  const fs::path out = dir / "a.h5";
  const auto values = [](std::size_t n, double scale) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37 * static_cast<double>(i));
    return v;
  };
  const std::vector<double> big = values(3 * 400 * 400, 1.0), wide = values(2 * 200000, 2.0),
                            small = values(4 * 30 * 30, 3.0), line = values(10000, 4.0);
  {
    io::ArrayFileWriter w(out.string());
    const io::ArrayStorage deflate{4};
    w.Create("/cube", {3, 400, 400}, "", deflate);
    for (std::uint64_t k : {2, 0, 1}) {
      w.WriteSlab("/cube", k, std::span<const double>(big).subspan(k * 160000, 160000));
    }
    w.Write({"/wide", {2, 200000}, wide, ""}, deflate);
    w.Write({"/small", {4, 30, 30}, small, ""}, deflate);
    w.Write({"/line", {10000}, line, ""}, deflate);
    w.Write({"/plain", {3, 400, 400}, big, ""}, io::ArrayStorage{0});
    w.Commit();
  }
  for (const auto& [name, expected] : {std::pair{"/cube", &big},
                                       {"/wide", &wide},
                                       {"/small", &small},
                                       {"/line", &line},
                                       {"/plain", &big}}) {
    const std::vector<double> got = Read(out, name);
    ASSERT_EQ(got.size(), expected->size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), expected->data(), got.size() * sizeof(double)), 0) << name;
  }
  const std::vector<int> shuffle_deflate{H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE};
  const testing::DatasetLayout cube = testing::ReadDatasetLayout(out.string(), "/cube");
  EXPECT_EQ(cube.filters, shuffle_deflate);
  // 400 × 400 = 160000 values exceed 2^16: 163 whole rows of one slab.
  EXPECT_EQ(cube.chunk, (std::vector<hsize_t>{1, 163, 400}));
  const testing::DatasetLayout wide_layout = testing::ReadDatasetLayout(out.string(), "/wide");
  EXPECT_EQ(wide_layout.filters, shuffle_deflate);
  EXPECT_EQ(wide_layout.chunk, (std::vector<hsize_t>{1, 65536}));
  // 3600 values: across slabs in one process, but below the size that is compressed.
  for (const char* name : {"/small", "/line", "/plain"}) {
    const testing::DatasetLayout layout = testing::ReadDatasetLayout(out.string(), name);
    EXPECT_TRUE(layout.chunk.empty()) << name;
    EXPECT_TRUE(layout.filters.empty()) << name;
  }
  // Compressed: smaller than the same values stored contiguous.
  EXPECT_EQ(testing::ReadDatasetLayout(out.string(), "/plain").storage_bytes, big.size() * 8);
  EXPECT_LT(cube.storage_bytes, big.size() * 8);

  // The slab's chunks compressed by 3 threads: the same values and the same compressed size
  // (the same bytes per chunk, whichever thread made them).
  const fs::path threaded = dir / "threads.h5";
  {
    io::ArrayFileWriter w(threaded.string());
    w.Create("/cube", {3, 400, 400}, "", io::ArrayStorage{4, 3});
    for (std::uint64_t k : {1, 2, 0}) {
      w.WriteSlab("/cube", k, std::span<const double>(big).subspan(k * 160000, 160000));
    }
    w.Commit();
  }
  const std::vector<double> got = Read(threaded, "/cube");
  ASSERT_EQ(got.size(), big.size());
  EXPECT_EQ(std::memcmp(got.data(), big.data(), got.size() * sizeof(double)), 0);
  EXPECT_EQ(testing::ReadDatasetLayout(threaded.string(), "/cube").storage_bytes,
            cube.storage_bytes);
}

// A config's output.compress_hdf5 / compression_level decide the level of fitted_data.h5's
// N×N arrays (and of the plots' data files).
TEST(FittedData, ConfigDecidesTheCompression) {
  const auto level = [](const std::string& output) {
    return config::ReadConfigString(
               "analysis_mode: static\n"
               "experimental_data: {data_folder_path: ., data_file_name: d.h5}\n" +
                   output,
               "c.yaml")
        .Hdf5DeflateLevel();
  };
  // Uncompressed by default (deflate costs ten times the write for 20-60 % less disk);
  // homodyne's template's `compress_hdf5: true` gives level 4.
  EXPECT_EQ(level(""), 0);
  EXPECT_EQ(level("output: {compress_hdf5: true}\n"), 4);
  EXPECT_EQ(level("output: {compress_hdf5: true, compression_level: 9}\n"), 9);
  EXPECT_EQ(level("output: {compress_hdf5: false, compression_level: 9}\n"), 0);
  EXPECT_EQ(level("output: {compress_hdf5: true, compression_level: 0}\n"), 0);
  EXPECT_THROW(level("output: {compression_level: 10}\n"), Error);
}

}  // namespace
}  // namespace homodyne
