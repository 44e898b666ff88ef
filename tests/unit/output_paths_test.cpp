// Output paths stay inside the output directory and never replace an input file.
#include "core/output_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class OutputPaths : public ::testing::Test {
 protected:
  std::string Touch(const fs::path& rel) const {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << "input\n";
    return (dir_ / rel).string();
  }
  static Error Caught(const OutputLayout& layout, const std::vector<std::string>& inputs) {
    try {
      CheckOutputsSpareInputs(layout, inputs);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "expected an error";
    return Error(ErrorKind::kInternal, "none");
  }
  const homodyne::testing::ScopedTempDir tmp_{"output_paths"};  // one per test, removed after it
  const fs::path dir_ = tmp_.path();
};

TEST_F(OutputPaths, GeneratedNamesStayInsideTheDirectory) {
  EXPECT_EQ(OutputFilePath("/out", "nlsq/parameters.json"), fs::path("/out/nlsq/parameters.json"));
  for (const char* bad : {"../x.json", "nlsq/../../x.json", "a/..", ".."}) {
    try {
      OutputFilePath("/out", bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_EQ(e.context().file, "/out");
      EXPECT_THAT(e.what(), HasSubstr("contains '..'")) << bad;
    }
  }
  try {
    OutputFilePath("/out", "/etc/passwd");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is absolute"));
  }
  EXPECT_THROW(OutputFilePath("/out", ""), Error);
}

TEST_F(OutputPaths, OutputDirectoryThatIsAnInputIsRejected) {
  const std::string data = Touch("data.h5");
  const Error e = Caught({data, {"nlsq"}, {}}, {data});
  EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(e.context().file, data);
  EXPECT_EQ(e.context().key, "--output-dir");
  EXPECT_THAT(e.what(), HasSubstr("is this input file"));
}

TEST_F(OutputPaths, InputInsideAnOwnedSubdirectoryIsRejected) {
  const std::string data = Touch("out/nlsq/fitted_data.h5");
  const Error e = Caught({dir_ / "out", {"nlsq"}, {"run_report.yaml"}}, {"", data});
  EXPECT_EQ(e.context().file, data);
  EXPECT_THAT(e.what(), HasSubstr("refusing to overwrite an input"));
  // Through a symbolic link to the same file.
  fs::create_symlink(data, dir_ / "link.h5");
  EXPECT_THROW(CheckOutputsSpareInputs({dir_ / "out", {"nlsq"}, {}}, {(dir_ / "link.h5").string()}),
               Error);
  // A subdirectory the run does not fill is fine.
  EXPECT_NO_THROW(CheckOutputsSpareInputs({dir_ / "out", {"cmc"}, {}}, {data}));
}

TEST_F(OutputPaths, InputThatIsAResultFileIsRejectedAlsoThroughAHardLink) {
  const std::string config = Touch("out/run_report.yaml");
  EXPECT_THROW(CheckOutputsSpareInputs({dir_ / "out", {}, {"run_report.yaml"}}, {config}), Error);
  const std::string other = Touch("elsewhere/config.yaml");
  fs::remove(config);
  fs::create_hard_link(other, config);
  const Error e = Caught({dir_ / "out/.", {}, {"run_report.yaml"}}, {other});
  EXPECT_EQ(e.context().file, other);
  // Inputs next to (not in) the results are fine, as is an output directory holding them.
  const std::string beside = Touch("out/config.yaml");
  EXPECT_NO_THROW(
      CheckOutputsSpareInputs({dir_ / "out", {"nlsq", "cmc"}, {"run_report.yaml"}}, {beside}));
}

}  // namespace
}  // namespace homodyne
