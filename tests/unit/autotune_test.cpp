// The autotune cache: hardware signature, cache location, round trip, and a tiny run.
#include "app/autotune.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/errors.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;

TopologyDescription SampleDescription() {
  TopologyDescription d;
  d.cpu_model = "Example CPU 9000";
  d.packages = 1;
  d.cores = 8;
  d.pus = 16;
  d.numa_nodes = {{0, 4, 8, 1ULL << 34, "0-3,8-11"}, {1, 4, 8, 1ULL << 34, "4-7,12-15"}};
  d.caches = {{"L1d", 32768}, {"L2", 1048576}, {"L3", 33554432}};
  d.total_memory_bytes = 1ULL << 35;
  d.process_cpuset = "0-15";
  return d;
}

LibraryVersions SampleVersions() {
  LibraryVersions v;
  v.homodyne = "1.0";
  v.mpi = "Open MPI v4.1.4";
  v.petsc = "3.18.4";
  v.hdf5 = "1.10.8";
  v.hwloc = "2.9.0";
  v.compiler = "GCC 12.2";
  v.build_type = "Release";
  return v;
}

// Sets an environment variable for the scope, restoring the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(AutotuneSignature, IsStableAndChangesWithTheHardwareOrLibraries) {
  const auto d = SampleDescription();
  const auto v = SampleVersions();
  const std::string sig = HardwareSignature(d, v);
  EXPECT_EQ(sig.size(), 16u);
  EXPECT_EQ(sig.find_first_not_of("0123456789abcdef"), std::string::npos) << sig;
  EXPECT_EQ(HardwareSignature(SampleDescription(), SampleVersions()), sig);
  // Memory size and the process binding are not part of the hardware signature.
  auto bound = d;
  bound.process_cpuset = "3";
  bound.total_memory_bytes /= 2;
  EXPECT_EQ(HardwareSignature(bound, v), sig);

  auto other = d;
  other.caches[2].second *= 2;
  EXPECT_NE(HardwareSignature(other, v), sig) << "L3 size";
  other = d;
  other.cpu_model = "Example CPU 9001";
  EXPECT_NE(HardwareSignature(other, v), sig) << "CPU model";
  other = d;
  other.numa_nodes.pop_back();
  EXPECT_NE(HardwareSignature(other, v), sig) << "NUMA layout";
  other = d;
  other.cores = 4;
  EXPECT_NE(HardwareSignature(other, v), sig) << "cores";
  auto newer = v;
  newer.petsc = "3.19.0";
  EXPECT_NE(HardwareSignature(d, newer), sig) << "PETSc version";
  EXPECT_NE(HardwareSignatureText(d, v).find("Example CPU 9000"), std::string::npos);
}

TEST(AutotuneSignature, OfThisMachineIsTheSameOnEveryQuery) {
  Topology first;
  Topology second;
  EXPECT_EQ(HardwareSignature(DescribeTopology(first), QueryLibraryVersions()),
            HardwareSignature(DescribeTopology(second), QueryLibraryVersions()));
}

TEST(AutotuneCache, LivesUnderXdgCacheHomeElseHome) {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/somewhere");
    EXPECT_EQ(TuneCachePath("0123456789abcdef"),
              fs::path("/tmp/somewhere/homodyne/tune-0123456789abcdef.json"));
  }
  ScopedEnv home("HOME", "/home/someone");
  for (const std::optional<std::string>& value :
       {std::optional<std::string>{}, std::optional<std::string>{"relative/dir"}}) {
    ScopedEnv xdg("XDG_CACHE_HOME", value);  // unset, or not absolute (ignored per XDG)
    EXPECT_EQ(TuneCacheDirectory(), fs::path("/home/someone/.cache/homodyne"));
  }
}

TEST(AutotuneCache, RoundTripsAndRejectsOtherSignaturesAndBrokenFiles) {
  const testing::ScopedTempDir tmp("tune_cache");
  const fs::path dir = tmp.path();
  ScopedEnv xdg("XDG_CACHE_HOME", dir.string());
  TuneSettings s;
  s.signature = HardwareSignature(SampleDescription(), SampleVersions());
  s.signature_text = HardwareSignatureText(SampleDescription(), SampleVersions());
  s.threads_per_rank = 3;
  s.chunk_points = 4096;
  s.points_per_second = 1.25e8;
  s.created = "2026-11-22T06:00:00Z";
  s.timings = {{1, 4096, 0.5}, {3, 4096, 0.2}};
  const fs::path path = TuneCachePath(s.signature);
  EXPECT_EQ(path.parent_path(), dir / "homodyne");
  EXPECT_FALSE(ReadTuneCache(path, s.signature).has_value());  // nothing cached yet
  WriteTuneCache(path, s);                                     // creates the directory
  const auto back = ReadTuneCache(path, s.signature);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->signature, s.signature);
  EXPECT_EQ(back->signature_text, s.signature_text);
  EXPECT_EQ(back->threads_per_rank, 3);
  EXPECT_EQ(back->chunk_points, 4096);
  EXPECT_EQ(back->points_per_second, 1.25e8);
  EXPECT_EQ(back->created, s.created);
  ASSERT_EQ(back->timings.size(), 2u);
  EXPECT_EQ(back->timings[1].threads, 3);
  EXPECT_EQ(back->timings[1].seconds_per_pass, 0.2);

  std::string why;
  EXPECT_FALSE(ReadTuneCache(path, "ffffffffffffffff", &why).has_value());
  EXPECT_NE(why.find("ffffffffffffffff"), std::string::npos) << why;

  std::ofstream(path) << "{\"signature\": \"" << s.signature << "\", \"threads_per_rank\": 0}";
  EXPECT_THROW(ReadTuneCache(path, s.signature), Error);
  std::ofstream(path) << "not json";
  try {
    ReadTuneCache(path, s.signature);
    ADD_FAILURE() << "malformed cache accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

TEST(Autotune, TimesEveryThreadCountAndChunkSize) {
  Topology topology;
  AutotuneOptions o;
  o.frames = 40;
  o.angles = 2;
  o.repeats = 1;
  o.chunk_points = {256, 2048};
  int lines = 0;
  const TuneSettings s = RunAutotune(topology, o, [&](const std::string&) { ++lines; });
  const int cores = topology.process_cores();
  EXPECT_EQ(static_cast<int>(s.timings.size()), 2 * cores);
  EXPECT_EQ(lines, 2 * cores);
  EXPECT_GE(s.threads_per_rank, 1);
  EXPECT_LE(s.threads_per_rank, cores);
  EXPECT_TRUE(s.chunk_points == 256 || s.chunk_points == 2048);
  for (const auto& t : s.timings) EXPECT_GT(t.seconds_per_pass, 0.0);
  EXPECT_GT(s.points_per_second, 0.0);
  EXPECT_FALSE(s.created.empty());
}

}  // namespace
}  // namespace homodyne
