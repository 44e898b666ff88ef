// homodyne's shard success-rate check: the config's combination.min_success_rate and
// min_success_rate_warning decide whether the kept fraction of shards is reported.
#include <gtest/gtest.h>

#include "cmc/cmc_fit.h"
#include "config/config_reader.h"

namespace homodyne::cmc {
namespace {

CmcRunResult Kept(int used, int total) {
  CmcRunResult r;
  r.shards.resize(static_cast<std::size_t>(total));
  r.shards_used = used;
  return r;
}

TEST(CmcSuccessRate, WarnsBelowTheConfiguredRatesAndNamesTheKey) {
  config::Config cfg = config::DefaultConfig();
  cfg.optimization.cmc.combination.min_success_rate = 0.9;
  cfg.optimization.cmc.combination.min_success_rate_warning = 0.7;
  CmcRunResult all = Kept(10, 10);
  WarnOnSuccessRate(cfg, all, Logger::Silent());
  EXPECT_TRUE(all.warnings.empty());

  CmcRunResult most = Kept(8, 10);  // 80 %: below 90 %, above 70 %
  WarnOnSuccessRate(cfg, most, Logger::Silent());
  ASSERT_EQ(most.warnings.size(), 1u);
  EXPECT_NE(most.warnings[0].find("8 of 10 shards kept"), std::string::npos) << most.warnings[0];
  EXPECT_NE(most.warnings[0].find("combination.min_success_rate)"), std::string::npos);

  CmcRunResult few = Kept(6, 10);  // 60 %: below both
  WarnOnSuccessRate(cfg, few, Logger::Silent());
  ASSERT_EQ(few.warnings.size(), 1u);
  EXPECT_NE(few.warnings[0].find("min_success_rate_warning"), std::string::npos);

  cfg.optimization.cmc.combination.min_success_rate = 0.5;  // the laminar template's lower bar
  cfg.optimization.cmc.combination.min_success_rate_warning = 0.4;
  CmcRunResult same = Kept(8, 10);
  WarnOnSuccessRate(cfg, same, Logger::Silent());
  EXPECT_TRUE(same.warnings.empty());
}

}  // namespace
}  // namespace homodyne::cmc
