// The parallel-HDF5 checkpoint store at 1 and 2 ranks: round trip (replicated and
// rank-owned datasets), fletcher32 corruption detection with fallback, keep-last-K,
// the run folders, and another run's checkpoint skipped with one note.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/checkpoint_store.h"
#include "core/errors.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"

namespace homodyne::checkpoint {
namespace {

namespace fs = std::filesystem;
using homodyne::testing::MpiTempDir;
using homodyne::testing::TestEnvironment;

RunIdentity Identity(const std::string& extra = "") {
  return {"analysis_mode: static\noptimization.nlsq.max_iterations: 100\n" + extra,
          "data.q: 0.0054\ndata.frames: 60\n"};
}

CheckpointRecord Sample(const Comm& comm, double scale) {
  CheckpointRecord r;
  r.PutDoubles("x", {1.5 * scale, -2.25, 1e-300, 3.0e8});
  r.PutInts("counters", {7, -1, 1LL << 40});
  r.PutText("tag", "fit");
  r.PutDoubles("empty", {});
  // One dataset per rank, written by that rank only (values known only there).
  for (int owner = 0; owner < comm.size(); ++owner) {
    std::vector<double> v;
    if (owner == comm.rank()) v = {10.0 * owner + scale, 0.5 * owner};
    // Non-owners pass the right length (values ignored): sizes come from the owner.
    if (owner != comm.rank()) v.assign(2, -1.0);
    r.PutDoubles("rank." + std::to_string(owner), v, owner);
  }
  return r;
}

TEST(CheckpointStore, RoundTripOnEveryRank) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "roundtrip");
  CheckpointStore store(world, {dir.path(), "nlsq", 3}, Identity(), Logger::Silent());
  const fs::path written = store.Write(Sample(world, 1.0));
  EXPECT_EQ(written.filename().string(), "nlsq_000001.h5");
  EXPECT_TRUE(fs::exists(written));
  const auto loaded = store.LoadNewest();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->sequence, 1);
  EXPECT_EQ(loaded->ranks_at_write, world.size());
  const CheckpointRecord& r = loaded->record;
  EXPECT_EQ(r.Doubles("x"), (std::vector<double>{1.5, -2.25, 1e-300, 3.0e8}));
  EXPECT_EQ(r.Ints("counters"), (std::vector<std::int64_t>{7, -1, 1LL << 40}));
  EXPECT_EQ(r.Text("tag"), "fit");
  EXPECT_TRUE(r.Doubles("empty").empty());
  for (int owner = 0; owner < world.size(); ++owner) {
    // Every rank sees the owner's values.
    EXPECT_EQ(r.Doubles("rank." + std::to_string(owner)),
              (std::vector<double>{10.0 * owner + 1.0, 0.5 * owner}));
  }
  // The identity texts are stored too.
  EXPECT_EQ(r.Text("identity.data"), Identity().data_description);
  // A second store on the same directory continues the numbering.
  CheckpointStore again(world, {dir.path(), "nlsq", 3}, Identity(), Logger::Silent());
  EXPECT_EQ(again.Write(Sample(world, 2.0)).filename().string(), "nlsq_000002.h5");
  // No temporary file remains.
  for (const auto& e : fs::directory_iterator(written.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
  // The files live in the run's own folder inside the directory.
  EXPECT_EQ(written.parent_path(), dir.path() / RunFolderName(Identity()));
}

// The folder is checked when the store is made, on every rank alike: a file where the folder
// should be (or on its way) is bad input naming the folder; an entry named like a checkpoint
// that is not a file is left out of the list (it was offered to --resume).
TEST(CheckpointStore, UnusableFolderFailsAtOnceAndOnlyFilesAreCheckpoints) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "folder", /*create=*/true);
  const fs::path blocker = dir.path() / "blocker";
  if (world.is_root()) {
    std::ofstream(blocker) << "not a folder";
    fs::create_directories(dir.path() / "ok" / "nlsq_000007.h5");
  }
  world.Barrier();
  for (const fs::path& bad : {blocker, blocker / "sub"}) {
    try {
      CheckpointStore store(world, {bad, "nlsq", 3}, Identity(), Logger::Silent());
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("checkpoint_dir"), std::string::npos) << e.what();
    }
  }
  CheckpointStore store(world, {dir.path() / "ok", "nlsq", 3, /*run_folder=*/false}, Identity(),
                        Logger::Silent());
  EXPECT_TRUE(store.List().empty());
  EXPECT_FALSE(store.LoadNewest().has_value());
  const fs::path written = store.Write(Sample(world, 1.0));
  EXPECT_EQ(written.filename().string(), "nlsq_000001.h5");
  EXPECT_EQ(store.List(), std::vector<fs::path>{written});
}

TEST(CheckpointStore, KeepsTheNewestK) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "keep");
  CheckpointStore store(world, {dir.path(), "nlsq", 2}, Identity(), Logger::Silent());
  for (int i = 1; i <= 5; ++i) store.Write(Sample(world, i));
  const auto files = store.List();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename().string(), "nlsq_000004.h5");
  EXPECT_EQ(files[1].filename().string(), "nlsq_000005.h5");
  const auto loaded = store.LoadNewest();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->record.Doubles("x")[0], 1.5 * 5);
}

// Flips one byte inside the first chunk of `dataset` (serial HDF5 to find the offset).
void Corrupt(const fs::path& file, const std::string& dataset) {
  hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  ASSERT_GE(d, 0);
  const hsize_t origin[1] = {0};
  unsigned mask = 0;
  haddr_t addr = 0;
  hsize_t size = 0;
  ASSERT_GE(H5Dget_chunk_info_by_coord(d, origin, &mask, &addr, &size), 0);
  H5Dclose(d);
  H5Fclose(f);
  std::FILE* fp = std::fopen(file.c_str(), "r+b");
  ASSERT_NE(fp, nullptr);
  std::fseek(fp, static_cast<long>(addr + 2), SEEK_SET);
  const int c = std::fgetc(fp);
  std::fseek(fp, static_cast<long>(addr + 2), SEEK_SET);
  std::fputc(c ^ 0x10, fp);
  std::fclose(fp);
}

TEST(CheckpointStore, CorruptNewestFallsBackToThePrevious) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "corrupt");
  CheckpointStore store(world, {dir.path(), "nlsq", 3}, Identity(), Logger::Silent());
  store.Write(Sample(world, 1.0));
  const fs::path newest = store.Write(Sample(world, 2.0));
  if (world.is_root()) Corrupt(newest, "x");
  world.Barrier();
  const auto loaded = store.LoadNewest();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->sequence, 1);
  EXPECT_EQ(loaded->record.Doubles("x")[0], 1.5);
  // Both corrupt: none left.
  if (world.is_root()) Corrupt(store.options().dir / "nlsq_000001.h5", "counters");
  world.Barrier();
  EXPECT_FALSE(store.LoadNewest().has_value());
}

// Runs of other data or another config keep their checkpoints in folders of their own, so
// one directory serves a whole batch: none sees the others' files.
TEST(CheckpointStore, EachRunHasItsOwnFolder) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "runs");
  RunIdentity other_data = Identity();
  other_data.data_description = "data.q: 0.0054\ndata.frames: 80\n";
  const RunIdentity other_config = Identity("optimization.nlsq.tolerance: 1e-10\n");
  {
    CheckpointStore store(world, {dir.path(), "nlsq", 3}, Identity(), Logger::Silent());
    store.Write(Sample(world, 1.0));
  }
  for (const RunIdentity& id : {other_data, other_config}) {
    CheckpointStore other(world, {dir.path(), "nlsq", 3}, id, Logger::Silent());
    EXPECT_NE(other.options().dir, dir.path() / RunFolderName(Identity()));
    EXPECT_FALSE(other.LoadNewest().has_value());
    EXPECT_EQ(other.Write(Sample(world, 2.0)).filename().string(), "nlsq_000001.h5");
  }
  CheckpointStore again(world, {dir.path(), "nlsq", 3}, Identity(), Logger::Silent());
  const auto loaded = again.LoadNewest();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->record.Doubles("x")[0], 1.5);
  // Another kind in the same folder is not seen at all.
  CheckpointStore cmc(world, {dir.path(), "cmc", 3}, Identity(), Logger::Silent());
  EXPECT_FALSE(cmc.LoadNewest().has_value());
}

// A checkpoint of another run in the folder (copied in, or a store without run folders) is
// never resumed and never an error: the run starts afresh, after one warning naming the file
// and the first key that differs.
TEST(CheckpointStore, AnotherRunsCheckpointIsSkippedWithOneNote) {
  const Comm& world = TestEnvironment().world();
  MpiTempDir dir(world, "foreign");
  {
    CheckpointStore store(world, {dir.path(), "nlsq", 3, false}, Identity(), Logger::Silent());
    store.Write(Sample(world, 1.0));
    store.Write(Sample(world, 2.0));
  }
  RunIdentity other_data = Identity();
  other_data.data_description = "data.q: 0.0054\ndata.frames: 80\n";
  for (const RunIdentity& id : {Identity("optimization.nlsq.tolerance: 1e-10\n"), other_data}) {
    char* buffer = nullptr;
    std::size_t length = 0;
    std::FILE* stream = open_memstream(&buffer, &length);
    ASSERT_NE(stream, nullptr);
    {
      const Logger logger(world.rank(), LogLevel::kInfo, stream, stream);
      CheckpointStore other(world, {dir.path(), "nlsq", 3, false}, id, logger);
      EXPECT_FALSE(other.LoadNewest().has_value());
    }
    std::fclose(stream);
    const std::string text(buffer, length);
    std::free(buffer);
    if (world.is_root()) {
      EXPECT_NE(text.find("nlsq_000002.h5"), std::string::npos) << text;
      EXPECT_NE(text.find(id.data_description == other_data.data_description
                              ? "data.frames"
                              : "optimization.nlsq.tolerance"),
                std::string::npos)
          << text;
      // One note, not one per file.
      EXPECT_EQ(text.find("another run", text.find("another run") + 1), std::string::npos) << text;
    }
  }
}

}  // namespace
}  // namespace homodyne::checkpoint
