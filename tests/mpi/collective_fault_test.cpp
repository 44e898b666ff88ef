// A failure on the last rank inside the NLSQ evaluation loop (the "fit" failure-injection
// stage) reaches every rank as the same agreed error: plain fits and multistart, where
// the failing rank's group and the other groups must not wait for each other.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "config/config_reader.h"
#include "core/errors.h"
#include "core/fault_injection.h"
#include "global/multistart.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

config::Config StaticConfig(const std::string& file) {
  const auto path = std::filesystem::path(file);
  const std::string yaml =
      "analysis_mode: static\nanalyzer_parameters:\n  dt: 0.1\n"
      "  scattering:\n    wavevector_q: 0.0054\n"
      "experimental_data:\n  data_folder_path: " +
      path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
      "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
      "  values: [3000, -0.6, 20]\n";
  return config::ReadConfigString(yaml, "collective-fault-test", {});
}

// Writes the dataset (rank 0) into `dir` and returns its path on every rank.
std::string WriteData(const testing::MpiTempDir& dir) {
  const Comm& world = testing::TestEnvironment().world();
  const std::string path = dir.file("fault.h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.frames = 30;
    o.phi_deg = {0, 90};
    o.noise = 1e-3;
    synth::WriteSyntheticDataset(StaticConfig(path), o);
  });
  world.Barrier();
  return path;
}

// Sets HOMODYNE_FAIL_AT for the scope of a test.
class InjectFailure {
 public:
  explicit InjectFailure(const std::string& spec) {
    ::setenv(kFailureInjectionVariable, spec.c_str(), 1);
  }
  ~InjectFailure() { ::unsetenv(kFailureInjectionVariable); }
};

template <typename Fn>
void ExpectAgreedFitFailure(Fn&& run) {
  const Comm& world = testing::TestEnvironment().world();
  const int last = world.size() - 1;
  try {
    run();
    ADD_FAILURE() << "rank " << world.rank() << ": no error";
  } catch (const Error& e) {
    EXPECT_TRUE(IsAgreed(e)) << e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_EQ(e.context().rank, last) << e.what();
    EXPECT_THAT(e.message(), ::testing::HasSubstr("injected failure at stage 'fit'"));
  }
}

TEST(CollectiveFaults, FitFailureOnTheLastRankReachesEveryRank) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "collective_fault");
  const std::string path = WriteData(dir);
  const config::Config cfg = StaticConfig(path);
  NlsqRunOptions o;
  o.print_progress = false;
  {
    const InjectFailure inject("fit@" + std::to_string(world.size() - 1));
    ExpectAgreedFitFailure([&] { RunNlsqFit(world, cfg, o, Logger::Silent()); });
  }
  // Without the injection the same fit works (the failure came from the hook).
  EXPECT_TRUE(RunNlsqFit(world, cfg, o, Logger::Silent()).summary.IsUsable());
}

TEST(CollectiveFaults, FitFailureInOneMultistartGroupReachesAllGroups) {
  const Comm& world = testing::TestEnvironment().world();
  const testing::MpiTempDir dir(world, "collective_fault");
  const std::string path = WriteData(dir);
  const config::Config cfg = StaticConfig(path);
  NlsqRunOptions o;
  o.print_progress = false;
  global::MultiStartOptions ms;
  ms.n_starts = 3;  // one group per rank at 2 ranks: the last rank's group fails alone
  const InjectFailure inject("fit@" + std::to_string(world.size() - 1));
  global::MultiStartSummary summary;
  ExpectAgreedFitFailure(
      [&] { global::RunMultiStartFit(world, cfg, o, ms, Logger::Silent(), &summary); });
}

}  // namespace
}  // namespace homodyne::nlsq
