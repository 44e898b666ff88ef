// Replays the committed fuzzing corpora (fuzz/corpus/) in the main suite, so that every
// input that once mattered to a fuzzer (seeds and crash reproducers) is checked on every
// build, with GCC and without libFuzzer: each input is accepted or rejected with a
// homodyne::Error, never with another exception or a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "core/errors.h"
#include "core/log.h"
#include "io/dataset.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> Corpus(const std::string& target) {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::directory_iterator(fs::path(HOMODYNE_SOURCE_DIR) / "fuzz/corpus" / target)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  return files;
}

TEST(FuzzCorpus, ConfigInputsGiveAConfigOrAHomodyneError) {
  const auto files = Corpus("fuzz_config");
  ASSERT_GE(files.size(), 4u);
  int accepted = 0, rejected = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    config::ReadOptions options;
    options.require_data_file = false;
    try {
      (void)config::ReadConfigString(text.str(), path.filename().string(), options);
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << path << ": " << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": foreign exception " << e.what();
    }
  }
  EXPECT_GT(accepted, 0);  // the example configs
  EXPECT_GT(rejected, 0);  // the broken seeds
}

TEST(FuzzCorpus, HdfInputsGiveMetadataOrAHomodyneError) {
  const auto files = Corpus("fuzz_h5_metadata");
  ASSERT_GE(files.size(), 4u);
  int accepted = 0, rejected = 0;
  for (const auto& path : files) {
    io::LoadOptions options;
    options.path = path.string();
    options.dt = 0.1;
    try {
      (void)io::ReadDatasetMetadata(options, Logger::Silent());
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(e.context().file, path.string()) << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": foreign exception " << e.what();
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace homodyne
