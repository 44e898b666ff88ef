// config::keys: the key paths other layers name are built from the key table's sections and
// refused when the table has no such key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "config/key_paths.h"
#include "config/key_table.h"
#include "core/errors.h"

namespace homodyne::config::keys {
namespace {

TEST(KeyPaths, EverySectionIsAKeyOfTheTable) {
  for (std::string_view s :
       {kMetadata, kAnalyzerParameters, kInitialParameters, kPhiFiltering, kParameterSpace, kOutput,
        kNlsq, kNlsqAntiDegeneracy, kNlsqGradientMonitoring, kNlsqCmaes, kNlsqMultiStart,
        kNlsqRecovery, kStreaming, kMcmc, kCmc, kCmcSharding, kCmcPerShardMcmc,
        kCmcBackendConfig}) {
    EXPECT_NE(FindKeySpec(s), nullptr) << s;
  }
}

TEST(KeyPaths, JoinsKnownKeys) {
  EXPECT_EQ(Key(kNlsqCmaes, "popsize"), "optimization.nlsq.cmaes.popsize");
  EXPECT_EQ(Key(kNlsqAntiDegeneracy, "hierarchical.trigger"),
            "optimization.nlsq.anti_degeneracy.hierarchical.trigger");
  EXPECT_EQ(Key(kParameterSpace, "bounds[].type"), "parameter_space.bounds[].type");
  EXPECT_EQ(Key(kParameterSpace, "priors.D0.dist_type"), "parameter_space.priors.D0.dist_type");
  EXPECT_EQ(FrameWindowKey(), "analyzer_parameters.start_frame/end_frame");
}

TEST(KeyPaths, RefusesAKeyTheTableLacks) {
  EXPECT_THROW(Key(kNlsqCmaes, "pop_size"), Error);
  EXPECT_THROW(Key(kNlsq, "no_such_key"), Error);
  EXPECT_THROW(KeyPair(kAnalyzerParameters, "start_frame", "stop_frame"), Error);
}

}  // namespace
}  // namespace homodyne::config::keys
