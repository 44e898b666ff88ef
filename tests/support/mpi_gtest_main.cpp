// GoogleTest main for tests that run under mpiexec.
//
// Only rank 0 prints results and writes --gtest_output files. After every test all
// ranks agree on its outcome, so a failure on any rank is reported by rank 0 and makes
// every rank exit non-zero.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "mpi_test_env.h"
#include "runtime/environment.h"

namespace homodyne::testing {
namespace {

Environment* g_env = nullptr;

class CrossRankFailureListener : public ::testing::EmptyTestEventListener {
 public:
  explicit CrossRankFailureListener(const Comm& comm) : comm_(comm) {}

  void OnTestEnd(const ::testing::TestInfo& info) override {
    int failed_here = info.result()->Failed() ? 1 : 0;
    int ranks_failed = 0;
    MPI_Allreduce(&failed_here, &ranks_failed, 1, MPI_INT, MPI_SUM, comm_.get());
    if (ranks_failed > failed_here) any_remote_failure_ = true;
    if (comm_.rank() == 0 && ranks_failed > failed_here) {
      std::printf("[  FAILED  ] %s.%s failed on %d other rank(s)\n", info.test_suite_name(),
                  info.name(), ranks_failed - failed_here);
      std::fflush(stdout);
    }
  }

  bool any_remote_failure() const { return any_remote_failure_; }

 private:
  const Comm& comm_;
  bool any_remote_failure_ = false;
};

}  // namespace

Environment& TestEnvironment() { return *g_env; }

}  // namespace homodyne::testing

int main(int argc, char** argv) {
  using homodyne::testing::CrossRankFailureListener;
  homodyne::EnvironmentOptions options;
  options.log_level = homodyne::LogLevel::kWarning;
  // PETSc options on the command line (-tao_monitor, ...) reach PETSc, as in the apps.
  options.petsc_args = homodyne::SplitPetscArguments(argc, argv).petsc_args;
  options.petsc_at_start = true;  // the tests call PETSc themselves
  int result = 1;
  {
    homodyne::Environment env(&argc, &argv, options);
    homodyne::testing::g_env = &env;
    ::testing::InitGoogleTest(&argc, argv);
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (env.rank() != 0) {
      delete listeners.Release(listeners.default_result_printer());
      delete listeners.Release(listeners.default_xml_generator());
    }
    auto* cross = new CrossRankFailureListener(env.world());
    listeners.Append(cross);  // gtest takes ownership
    int local = RUN_ALL_TESTS();
    if (cross->any_remote_failure()) local = 1;
    MPI_Allreduce(&local, &result, 1, MPI_INT, MPI_MAX, env.world().get());
    homodyne::testing::g_env = nullptr;
  }
  return result;
}
