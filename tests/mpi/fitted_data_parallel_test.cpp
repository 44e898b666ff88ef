// fitted_data.h5 written by all ranks together (each rank computes its share of the angles
// and writes it into the one file, or, compressed, compresses it for rank 0 to write), at 1
// and 2 ranks: the file has the bits of the one-process writer's, the model and limit are
// rank 0's (other ranks may pass an incomplete result), and a bad data file or a failed write
// on any rank ends in the same error on every rank with no file and no temporary left.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "file_size_limit.h"
#include "h5_read.h"
#include "io/writers.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "outputs/fitted_data.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;
using homodyne::testing::FileSizeLimit;
using homodyne::testing::MpiTempDir;
using homodyne::testing::TestEnvironment;

constexpr int kFrames = 9;
constexpr int kAngles = 5;  // more angles than ranks, not a multiple of 2

// Rank 0 writes a legacy-layout file of five angles; every rank reads the config. `nan_angle`
// ≥ 0: that angle's matrix holds a NaN.
// `frames` frames per angle; `output` is appended to the YAML (an `output:` section).
config::Config MakeDataset(const Comm& comm, const fs::path& dir, int nan_angle = -1,
                           int frames = kFrames, const std::string& output = "") {
  if (comm.is_root()) {
    std::vector<std::vector<double>> matrices;
    std::vector<double> q, phi;
    for (int k = 0; k < kAngles; ++k) {
      std::vector<double> m(static_cast<std::size_t>(frames * frames));
      for (int i = 0; i < frames; ++i) {
        for (int j = 0; j < frames; ++j) {
          m[static_cast<std::size_t>(i * frames + j)] =
              1.0 + (0.2 + 0.04 * k) * std::exp(-0.15 * std::abs(i - j)) + 0.001 * (i + j + k);
        }
      }
      if (k == nan_angle) m[static_cast<std::size_t>(2 * frames + 5)] = std::nan("");
      matrices.push_back(std::move(m));
      q.push_back(0.0054);
      phi.push_back(-60.0 + 30.0 * k);
    }
    io::WriteApsOld((dir / "data.h5").string(), q, phi, matrices);
  }
  comm.Barrier();
  const std::string yaml =
      "analysis_mode: laminar_flow\n"
      "analyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n  end_frame: " +
      std::to_string(frames) +
      "\n"
      "  scattering: {wavevector_q: 0.0054}\n"
      "  geometry: {stator_rotor_gap: 2000000}\n"
      "experimental_data:\n  data_folder_path: " +
      dir.string() + "\n  data_file_name: data.h5\n" +
      (output.empty() ? std::string("output: {fitted_data: full}\n") : output);
  return config::ReadConfigString(yaml, "fitted_mpi.yaml");
}

FittedModel Model(FittedDataConvention convention) {
  FittedModel m;
  m.analysis_mode = "laminar_flow";
  m.physical = {900.0, -0.3, 4.0, 2e-3, 0.1, 1e-4, 5.0};
  for (int k = 0; k < kAngles; ++k) {
    m.contrast.push_back(0.25 + 0.01 * k);
    m.offset.push_back(1.0 + 0.002 * k);
  }
  m.convention = convention;
  return m;
}

const char* const kArrays[] = {"/c2_exp",
                               "/c2_theoretical_raw",
                               "/c2_theoretical_scaled",
                               "/c2_solver_scaled",
                               "/per_angle_scaling",
                               "/per_angle_scaling_solver",
                               "/residuals",
                               "/residuals_normalized",
                               "/t1",
                               "/t2",
                               "/q",
                               "/phi_angles"};

// The shared file's arrays hold the one-process writer's bits, at `frames` frames.
void ExpectTheOneProcessBits(int frames) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_bits", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path(), -1, frames);
  for (auto convention : {FittedDataConvention::kNlsq, FittedDataConvention::kCmc}) {
    const fs::path serial = dir.path() / "serial.h5", shared = dir.path() / "shared.h5";
    if (world.is_root()) WriteFittedData(serial, cfg, "", Model(convention), Logger::Silent());
    // The other ranks pass an empty model and a zero limit: rank 0's are used.
    const FittedModel model = world.is_root() ? Model(convention) : FittedModel{};
    WriteFittedData(world, shared, cfg, "", model, Logger::Silent(),
                    world.is_root() ? kFittedDataMaxBytes : 0.0);
    world.Barrier();
    ASSERT_TRUE(fs::exists(shared));
    EXPECT_FALSE(fs::exists(shared.string() + ".tmp"));
    for (const char* name : kArrays) {
      std::vector<hsize_t> ds, dp;
      const auto a = homodyne::testing::ReadWholeDataset(serial.string(), name, &ds);
      const auto b = homodyne::testing::ReadWholeDataset(shared.string(), name, &dp);
      EXPECT_EQ(ds, dp) << name;
      ASSERT_EQ(a.size(), b.size()) << name;
      for (std::size_t e = 0; e < a.size(); ++e) {
        ASSERT_EQ(std::memcmp(&a[e], &b[e], sizeof(double)), 0) << name << " value " << e;
      }
    }
    const io::GroupAttributes attrs = io::ReadAttributes(shared.string(), "/");
    EXPECT_EQ(attrs.strings.size(), 3u);  // analysis_mode, source, fitted_data
    world.Barrier();
    if (world.is_root()) {
      fs::remove(serial);
      fs::remove(shared);
    }
    world.Barrier();
  }
}

TEST(FittedDataParallel, EveryRankCountWritesTheOneProcessBits) {
  ExpectTheOneProcessBits(kFrames);
}

// 380 frames: each angle's slab (1.1 MiB) is written in whole pages with O_DIRECT where the
// file system takes it, and its ends through MPI-IO (parallel/shared_file.h).
TEST(FittedDataParallel, SlabsAboveAMebibyteWriteTheOneProcessBits) {
  ExpectTheOneProcessBits(380);
}

// 48 frames: the five 48 × 48 matrices (11520 values) are compressed (shuffle + deflate),
// each angle by the rank that computed it; their values are those of the one-process
// writer's uncompressed file, bit for bit.
constexpr int kCompressedFrames = 48;

TEST(FittedDataParallel, CompressedArraysHoldTheUncompressedOneProcessBits) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_deflate", /*create=*/true);
  const config::Config cfg =
      MakeDataset(world, dir.path(), -1, kCompressedFrames,
                  "output: {compress_hdf5: true, compression_level: 6, fitted_data: full}\n");
  config::Config plain = cfg;
  plain.compress_hdf5 = false;
  const fs::path serial = dir.path() / "serial.h5", shared = dir.path() / "shared.h5";
  if (world.is_root()) {
    WriteFittedData(serial, plain, "", Model(FittedDataConvention::kNlsq), Logger::Silent());
  }
  WriteFittedData(world, shared, cfg, "", Model(FittedDataConvention::kNlsq), Logger::Silent());
  world.Barrier();
  ASSERT_TRUE(fs::exists(shared));
  EXPECT_FALSE(fs::exists(shared.string() + ".tmp"));
  for (const char* name : kArrays) {
    const auto a = homodyne::testing::ReadWholeDataset(serial.string(), name);
    const auto b = homodyne::testing::ReadWholeDataset(shared.string(), name);
    ASSERT_EQ(a.size(), b.size()) << name;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)), 0) << name;
    const auto layout = homodyne::testing::ReadDatasetLayout(shared.string(), name);
    const bool cube =
        a.size() == static_cast<std::size_t>(kAngles * kCompressedFrames * kCompressedFrames);
    const std::vector<int> filters =
        cube ? std::vector<int>{H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE} : std::vector<int>{};
    EXPECT_EQ(layout.filters, filters) << name;
    if (cube) {
      // Shared by ranks: one angle per chunk, each compressed where it was computed; one
      // process: the five angles (92 KiB) in one chunk.
      const hsize_t angles = world.size() > 1 ? 1 : kAngles;
      EXPECT_EQ(layout.chunk, (std::vector<hsize_t>{angles, kCompressedFrames, kCompressedFrames}))
          << name;
      EXPECT_TRUE(homodyne::testing::ReadDatasetLayout(serial.string(), name).filters.empty());
    }
  }
  world.Barrier();
  if (world.is_root()) {
    fs::remove(serial);
    fs::remove(shared);
  }
  world.Barrier();
}

// The directory's entries other than the dataset: what a writer left behind.
std::vector<std::string> LeftBeside(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename() != "data.h5") names.push_back(e.path().filename().string());
  }
  return names;
}

// Runs `write` (one writer's call, on every rank) and expects an Error naming `needle` on
// each, then nothing in the output's directory but the dataset (neither the file nor a
// temporary); returns the error's kind (kInternal if nothing was thrown, which the EXPECT
// already reports).
template <typename Write>
ErrorKind ExpectWriteFailsEverywhereLeavingNothing(const Comm& world, const fs::path& out,
                                                   Write&& write, const std::string& needle) {
  bool threw = false;
  ErrorKind kind = ErrorKind::kInternal;
  try {
    write();
  } catch (const Error& e) {
    threw = true;
    kind = e.kind();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_TRUE(threw);
  world.Barrier();
  if (world.is_root()) {
    EXPECT_EQ(LeftBeside(out.parent_path()), (std::vector<std::string>{})) << out.filename();
  }
  world.Barrier();
  return kind;
}

// fitted_data.h5 from `data_file` (empty: the config's).
ErrorKind ExpectFailsEverywhereLeavingNothing(const Comm& world, const fs::path& out,
                                              const config::Config& cfg,
                                              const std::string& data_file,
                                              const std::string& needle) {
  return ExpectWriteFailsEverywhereLeavingNothing(
      world, out,
      [&] {
        WriteFittedData(world, out, cfg, data_file, Model(FittedDataConvention::kNlsq),
                        Logger::Silent());
      },
      needle);
}

// fitted_data.npz, stored (the config's own data file).
ErrorKind ExpectNpzFailsEverywhereLeavingNothing(const Comm& world, const fs::path& out,
                                                 const config::Config& cfg,
                                                 const std::string& needle) {
  return ExpectWriteFailsEverywhereLeavingNothing(
      world, out,
      [&] {
        WriteFittedDataNpz(world, out, cfg, "", Model(FittedDataConvention::kNlsq),
                           Logger::Silent());
      },
      needle);
}

TEST(FittedDataParallel, BadDataFileFailsOnEveryRankAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_bad", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path());
  const fs::path out = dir.path() / "fitted_data.h5";
  const std::string missing = (dir.path() / "missing.h5").string();
  ExpectFailsEverywhereLeavingNothing(world, out, cfg, missing, "missing.h5");
}

// Angle 3 is read by rank 1 of 2 only (k ≡ rank mod ranks): its error reaches every rank,
// nothing hangs and nothing is left.
TEST(FittedDataParallel, OneRanksBadAngleFailsOnEveryRankAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_nan", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path(), /*nan_angle=*/3);
  const fs::path out = dir.path() / "fitted_data.h5";
  EXPECT_EQ(ExpectFailsEverywhereLeavingNothing(world, out, cfg, "", "NaN/Inf"),
            ErrorKind::kBadInput);
}

// The same with compressed arrays: the error of rank 1's angle is agreed before rank 0
// waits for that angle.
TEST(FittedDataParallel, CompressedWriteWithOneRanksBadAngleFailsEverywhere) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_nan_deflate", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path(), /*nan_angle=*/3, kCompressedFrames,
                                         "output: {compress_hdf5: true}\n");
  ASSERT_GT(cfg.Hdf5DeflateLevel(), 0);
  const fs::path out = dir.path() / "fitted_data.h5";
  EXPECT_EQ(ExpectFailsEverywhereLeavingNothing(world, out, cfg, "", "NaN/Inf"),
            ErrorKind::kBadInput);
}

// Rank 0 writes the file for all: when its writes fail (the file may not grow past 16 KiB)
// while the other ranks are sending it their angles, every rank ends with the error,
// compressed or not, and nothing hangs, crashes (HDF5's shutdown after a failed close did)
// or is left behind.
TEST(FittedDataParallel, FailedWriteOnRankZeroFailsEverywhereAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  for (const bool compress : {false, true}) {
    MpiTempDir dir(world, compress ? "fitted_full_deflate" : "fitted_full", /*create=*/true);
    const config::Config cfg =
        MakeDataset(world, dir.path(), -1, kCompressedFrames,
                    compress ? "output: {compress_hdf5: true, fitted_data: full}\n"
                             : "output: {compress_hdf5: false, fitted_data: full}\n");
    const fs::path out = dir.path() / "fitted_data.h5";
    FileSizeLimit limit(world.is_root() ? 16 * 1024 : 0);
    if (world.is_root()) {
      ASSERT_TRUE(limit.active());
    }
    EXPECT_EQ(ExpectFailsEverywhereLeavingNothing(world, out, cfg, "", "fitted_data.h5"),
              ErrorKind::kIo)
        << (compress ? "compressed" : "uncompressed");
  }
}

// Uncompressed at several ranks, every rank writes its own angles into the file: when rank
// 1's writes fail (its files may not grow past 16 KiB; its first angle lies beyond) and rank
// 0's succeed, every rank ends with the error and nothing is left behind.
TEST(FittedDataParallel, FailedWriteOnAnotherRankFailsEverywhereAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  if (world.size() < 2) GTEST_SKIP() << "needs a second rank";
  MpiTempDir dir(world, "fitted_rank1_full", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path(), -1, kCompressedFrames,
                                         "output: {compress_hdf5: false, fitted_data: full}\n");
  const fs::path out = dir.path() / "fitted_data.h5";
  FileSizeLimit limit(world.rank() == 1 ? 16 * 1024 : 0);
  if (world.rank() == 1) {
    ASSERT_TRUE(limit.active());
  }
  EXPECT_EQ(ExpectFailsEverywhereLeavingNothing(world, out, cfg, "", "fitted_data.h5"),
            ErrorKind::kIo);
}

// A disk that is full from the start: the file cannot even be created (its temporary is a
// link to /dev/full); the error reaches every rank and the temporary is removed.
TEST(FittedDataParallel, UncreatableFileFailsEverywhereAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_devfull", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path());
  const fs::path out = dir.path() / "fitted_data.h5";
  if (world.is_root()) fs::create_symlink("/dev/full", out.string() + ".tmp");
  world.Barrier();
  EXPECT_EQ(ExpectFailsEverywhereLeavingNothing(world, out, cfg, "", "fitted_data.h5"),
            ErrorKind::kIo);
  EXPECT_FALSE(fs::is_symlink(out.string() + ".tmp"));
}

TEST(FittedDataParallel, OneAngleAboveTheLimitSkipsOnEveryRank) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "fitted_limit", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path());
  const fs::path out = dir.path() / "fitted_data.h5";
  // Four or five 9 × 9 matrices take 2592 or 3240 bytes: rank 0's limit decides, whatever the
  // others pass.
  WriteFittedData(world, out, cfg, "", Model(FittedDataConvention::kNlsq), Logger::Silent(),
                  world.is_root() ? 2000.0 : 1e12);
  world.Barrier();
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

// ---- fitted_data.npz (stored members: every rank writes its angles' slabs in place) ----

std::string FileBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(FittedDataNpzParallel, EveryRankCountWritesTheOneProcessFile) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "npz_bits", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path());
  for (auto convention : {FittedDataConvention::kNlsq, FittedDataConvention::kCmc}) {
    const fs::path serial = dir.path() / "serial.npz", shared = dir.path() / "shared.npz";
    if (world.is_root()) {
      const Comm self(MPI_COMM_SELF);
      WriteFittedDataNpz(self, serial, cfg, "", Model(convention), Logger::Silent());
    }
    // The other ranks pass an empty model and a zero limit: rank 0's are used.
    const FittedModel model = world.is_root() ? Model(convention) : FittedModel{};
    WriteFittedDataNpz(world, shared, cfg, "", model, Logger::Silent(),
                       world.is_root() ? kFittedDataMaxBytes : 0.0);
    world.Barrier();
    if (world.is_root()) {
      const std::string a = FileBytes(serial), b = FileBytes(shared);
      // 5 cubes of 5 × 9 × 9 doubles at least, and the zip's end record at the end.
      EXPECT_GT(a.size(), 5u * 5 * 81 * 8);
      EXPECT_EQ(a.substr(a.size() - 22, 4), std::string("PK\x05\x06", 4));
      EXPECT_TRUE(a == b) << "the archive written by " << world.size() << " rank(s) differs";
      fs::remove(serial);
      fs::remove(shared);
      EXPECT_EQ(LeftBeside(dir.path()), (std::vector<std::string>{}))
          << "besides serial.npz and shared.npz";
    }
    world.Barrier();
  }
}

// Angle 3 is computed by rank 1 of 2 only: its error reaches every rank, nothing is left.
TEST(FittedDataNpzParallel, OneRanksBadAngleFailsOnEveryRankAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "npz_nan", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path(), /*nan_angle=*/3);
  EXPECT_EQ(
      ExpectNpzFailsEverywhereLeavingNothing(world, dir.path() / "fitted_data.npz", cfg, "NaN/Inf"),
      ErrorKind::kBadInput);
}

// A rank whose writes fail (its files may not grow past 16 KiB, as on a full disk): rank 0,
// which writes the headers and directory last, or rank 1, whose first slabs lie beyond.
TEST(FittedDataNpzParallel, FailedWriteOnAnyRankFailsEverywhereAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  for (int failing = 0; failing < world.size(); ++failing) {
    MpiTempDir dir(world, "npz_full_" + std::to_string(failing), /*create=*/true);
    const config::Config cfg = MakeDataset(world, dir.path(), -1, kCompressedFrames,
                                           "output: {compress_hdf5: false, fitted_data: full}\n");
    FileSizeLimit limit(world.rank() == failing ? 16 * 1024 : 0);
    if (world.rank() == failing) {
      ASSERT_TRUE(limit.active());
    }
    EXPECT_EQ(ExpectNpzFailsEverywhereLeavingNothing(world, dir.path() / "fitted_data.npz", cfg,
                                                     "fitted_data.npz"),
              ErrorKind::kIo)
        << "failing rank " << failing;
  }
}

// The temporary cannot be written (it is a link to /dev/full): the error reaches every rank
// and the link is removed.
TEST(FittedDataNpzParallel, UnwritableTemporaryFailsEverywhereAndLeavesNothing) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "npz_devfull", /*create=*/true);
  const config::Config cfg = MakeDataset(world, dir.path());
  const fs::path out = dir.path() / "fitted_data.npz";
  if (world.is_root()) fs::create_symlink("/dev/full", TemporaryPathFor(out));
  world.Barrier();
  EXPECT_EQ(ExpectNpzFailsEverywhereLeavingNothing(world, out, cfg, "fitted_data.npz"),
            ErrorKind::kIo);
}

}  // namespace
}  // namespace homodyne
