// Run identity (config/data descriptions, hashes, first difference), the kill/signal
// hook specification and the NutsChainState ↔ record round trip.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/interrupt.h"
#include "checkpoint/run_identity.h"
#include "cmc/cmc_checkpoint.h"
#include "config/config_digest.h"
#include "config/config_reader.h"

namespace homodyne::checkpoint {
namespace {

config::Config Parse(const std::string& yaml) {
  config::ReadOptions ro;
  ro.require_data_file = false;
  return config::ReadConfigString(yaml, "test.yaml", ro);
}

TEST(RunIdentity, CheckpointSettingsDoNotChangeTheConfigHash) {
  const std::string base =
      "analysis_mode: static\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
      "  values: [20000, -0.3, 0]\n";
  const auto a = config::DescribeConfig(Parse(base), {});
  const auto b = config::DescribeConfig(
      Parse(base + "optimization:\n  streaming:\n    enable_checkpoints: true\n"
                   "    checkpoint_frequency: 3\n    resume_from_checkpoint: true\n"),
      {});
  EXPECT_EQ(HashText(a), HashText(b));
  const auto c =
      config::DescribeConfig(Parse(base + "optimization:\n  nlsq:\n    max_iterations: 7\n"), {});
  EXPECT_NE(HashText(a), HashText(c));
  EXPECT_NE(FirstDifference(a, c).find("optimization.nlsq.max_iterations"), std::string::npos)
      << FirstDifference(a, c);
  // Command-line overrides count.
  const auto d = config::DescribeConfig(Parse(base), {{"initial.D0", "5"}});
  EXPECT_NE(HashText(a), HashText(d));
  EXPECT_NE(FirstDifference(a, d).find("cli.initial.D0"), std::string::npos);
}

// The held set is part of the identity whatever key held it; nothing held adds no line.
TEST(RunIdentity, HeldParametersChangeTheIdentity) {
  const std::string base =
      "analysis_mode: static\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
      "  values: [20000, -0.3, 0]\n";
  const config::Config free = Parse(base);
  const auto a = config::DescribeConfig(free, {});
  EXPECT_EQ(a.find("held_parameters"), std::string::npos);
  config::Config held = free;
  held.parameters.at(2).vary = false;  // same raw YAML, D_offset held
  const auto b = config::DescribeConfig(held, {});
  EXPECT_NE(HashText(a), HashText(b));
  EXPECT_NE(FirstDifference(a, b).find("effective.held_parameters: D_offset=0"), std::string::npos)
      << FirstDifference(a, b);
  config::Config other = free;
  other.parameters.at(1).vary = false;
  EXPECT_NE(HashText(b), HashText(config::DescribeConfig(other, {})));
  // From the config keys: fixed_parameters and an active_parameters subset.
  const auto fixed =
      config::DescribeConfig(Parse(base + "  fixed_parameters: {D_offset: 0.0}\n"), {});
  EXPECT_NE(fixed.find("effective.held_parameters: D_offset=0"), std::string::npos) << fixed;
  const auto active =
      config::DescribeConfig(Parse(base + "  active_parameters: [D0, D_offset]\n"), {});
  EXPECT_NE(active.find("effective.held_parameters: alpha=-0.3"), std::string::npos) << active;
}

TEST(RunIdentity, FirstDifferenceNamesTheKey) {
  EXPECT_EQ(FirstDifference("a: 1\nb: 2\n", "a: 1\nb: 2\n"), "");
  EXPECT_EQ(FirstDifference("a: 1\nb: 2\n", "a: 1\nb: 3\n"),
            "checkpoint has 'b: 2', this run has 'b: 3'");
  EXPECT_NE(FirstDifference("a: 1\n", "a: 1\nc: 4\n").find("c: 4"), std::string::npos);
  EXPECT_EQ(HashText(""), "cbf29ce484222325");  // FNV-1a 64 offset basis
}

TEST(Interrupt, PointListParsing) {
  EXPECT_TRUE(PointListed("nlsq_iter:3", "nlsq_iter", 3));
  EXPECT_FALSE(PointListed("nlsq_iter:3", "nlsq_iter", 4));
  EXPECT_FALSE(PointListed("nlsq_iter:3", "cmc_draw", 3));
  EXPECT_TRUE(PointListed("cmc_draw:120,nlsq_iter:7", "nlsq_iter", 7));
  EXPECT_FALSE(PointListed("nlsq_iter:x", "nlsq_iter", 0));
  EXPECT_FALSE(PointListed("", "nlsq_iter", 0));
}

TEST(CmcCheckpoint, ChainStateRoundTripsExactly) {
  nuts::NutsChainState s;
  s.dimension = 3;
  s.metric_kind = 1;
  s.iteration = 123;
  s.position = {0.1, -2.5, 1e-310};
  s.step_size = 0.0123;
  s.inverse_metric = {1, 0.5, 0, 0.5, 2, 0.1, 0, 0.1, 3};
  s.da_counter = 17;
  s.da_s_bar = -0.25;
  s.da_x_bar = std::numeric_limits<double>::denorm_min();
  s.da_mu = 2.3;
  s.window_counter = 5;
  s.window_size = 25;
  s.window_next_end = 100;
  s.welford_count = 4;
  s.welford_mean = {1, 2, 3};
  s.welford_m2 = {0.1, 0.2, 0.3};
  s.rng = {0xFFFFFFFFFFFFFFFFULL, 7, 1ULL << 63, 99};
  CheckpointRecord r;
  StoreChainState(r, "p.", s, 0);
  const nuts::NutsChainState t = LoadChainState(r, "p.");
  EXPECT_EQ(t.dimension, s.dimension);
  EXPECT_EQ(t.metric_kind, s.metric_kind);
  EXPECT_EQ(t.iteration, s.iteration);
  EXPECT_EQ(t.position, s.position);
  EXPECT_EQ(t.step_size, s.step_size);
  EXPECT_EQ(t.inverse_metric, s.inverse_metric);
  EXPECT_EQ(t.da_counter, s.da_counter);
  EXPECT_EQ(t.da_s_bar, s.da_s_bar);
  EXPECT_EQ(t.da_x_bar, s.da_x_bar);
  EXPECT_EQ(t.da_mu, s.da_mu);
  EXPECT_EQ(t.window_counter, s.window_counter);
  EXPECT_EQ(t.window_size, s.window_size);
  EXPECT_EQ(t.window_next_end, s.window_next_end);
  EXPECT_EQ(t.welford_count, s.welford_count);
  EXPECT_EQ(t.welford_mean, s.welford_mean);
  EXPECT_EQ(t.welford_m2, s.welford_m2);
  EXPECT_EQ(t.rng.seed, s.rng.seed);
  EXPECT_EQ(t.rng.stream_a, s.rng.stream_a);
  EXPECT_EQ(t.rng.stream_b, s.rng.stream_b);
  EXPECT_EQ(t.rng.position, s.rng.position);
}

}  // namespace
}  // namespace homodyne::checkpoint
