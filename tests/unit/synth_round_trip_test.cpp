// homodyne-synth's library path: the written file loads back (both layouts, LZF) to the
// model at the true parameters within 1e-12 off the diagonal; the truth round-trips.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/errors.h"
#include "io/dataset.h"
#include "model/reference_model.h"
#include "synth/synthetic_dataset.h"
#include "synth_fixture.h"
#include "temp_dir.h"

namespace homodyne {
namespace {

double MaxOffDiagonalError(const io::Dataset& data, const synth::SynthTruth& truth) {
  model::reference::ModelInput in;
  in.mode = truth.mode;
  in.geometry = {data.meta.q_physics, truth.geometry.L, truth.geometry.dt};
  in.t = data.meta.t;
  in.phi_deg = data.meta.phi_values();
  in.physical = truth.physical;
  in.contrast = truth.contrast;
  in.offset = truth.offset;
  const auto ref = model::reference::Evaluate(in);
  double worst = 0.0;
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    for (std::int64_t i = 0; i < data.meta.n_frames; ++i) {
      for (std::int64_t j = 0; j < data.meta.n_frames; ++j) {
        if (i == j) continue;
        worst = std::max(
            worst, std::abs(data.at(k, i, j) -
                            ref.C2(static_cast<int>(k), static_cast<int>(i), static_cast<int>(j))));
      }
    }
  }
  return worst;
}

struct Case {
  std::string mode, values, format;
  bool lzf;
};

TEST(SynthRoundTrip, NoiseFreeFileLoadsBackToTheModel) {
  const testing::ScopedTempDir dir("synth_round_trip");
  const Case cases[] = {
      {"laminar_flow", "20000, -0.5, 100, 0.002, -0.3, 0.001, 5", "aps_old", false},
      {"laminar_flow", "20000, -0.5, 100, 0.002, -0.3, 0.001, 5", "aps_u", false},
      {"laminar_flow", "5000, 0.3, 10, 0.01, 0.2, 0.0, -3", "aps_u", true},
      {"static", "1500, -1.2, 5", "aps_old", false},
  };
  for (const auto& c : cases) {
    const config::Config cfg = testing::SynthConfig(c.mode, c.values);
    synth::SynthOptions o;
    o.output = dir.file(c.mode + "_" + c.format + (c.lzf ? "_lzf" : "") + ".h5");
    o.format = c.format;
    o.lzf = c.lzf;
    o.frames = 60;
    o.phi_deg = {-60, 0, 30, 90, 150};
    o.contrast = 0.3;
    o.offset = 1.01;
    const synth::SynthTruth truth = synth::WriteSyntheticDataset(cfg, o);

    io::LoadOptions lo;
    lo.path = o.output;
    lo.dt = truth.geometry.dt;
    lo.target_q = truth.geometry.q;
    const io::Dataset data = io::LoadDataset(lo, Logger::Silent());
    ASSERT_EQ(data.c2.size(), 5u);
    ASSERT_EQ(data.meta.n_frames, 60);
    EXPECT_LE(MaxOffDiagonalError(data, truth), 1e-12) << c.mode << " " << c.format;

    const synth::SynthTruth back = synth::ReadSyntheticTruth(o.output);
    EXPECT_EQ(back.physical, truth.physical);
    EXPECT_EQ(back.phi_deg, truth.phi_deg);
    EXPECT_EQ(back.contrast, truth.contrast);
    EXPECT_EQ(back.frames, 60);
  }
}

TEST(SynthRoundTrip, NoiseIsSeededSymmetricAndOfTheRequestedSize) {
  const testing::ScopedTempDir dir("synth_round_trip");
  const config::Config cfg = testing::SynthConfig("static", "1500, 0, 5");
  synth::SynthOptions o;
  o.frames = 80;
  o.phi_deg = {0};
  o.noise = 0.01;
  o.seed = 7;
  o.output = dir.file("noisy_a.h5");
  const auto truth = synth::WriteSyntheticDataset(cfg, o);
  o.output = dir.file("noisy_b.h5");
  synth::WriteSyntheticDataset(cfg, o);
  io::LoadOptions lo;
  lo.dt = truth.geometry.dt;
  lo.path = dir.file("noisy_a.h5");
  const auto a = io::LoadDataset(lo, Logger::Silent());
  lo.path = dir.file("noisy_b.h5");
  const auto b = io::LoadDataset(lo, Logger::Silent());
  EXPECT_EQ(a.c2, b.c2);  // same seed, same file
  const auto clean = synth::ModelMatrices(truth);
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int i = 0; i < 80; ++i) {
    for (int j = i + 1; j < 80; ++j) {
      EXPECT_EQ(a.at(0, i, j), a.at(0, j, i));
      const double e = a.at(0, i, j) - clean[0][static_cast<std::size_t>(i * 80 + j)];
      sum += e;
      sum2 += e * e;
      ++n;
    }
  }
  const double sd = std::sqrt(sum2 / n - (sum / n) * (sum / n));
  EXPECT_NEAR(sd, 0.01, 0.01 * 5.0 / std::sqrt(2.0 * n));
  EXPECT_NEAR(sum / n, 0.0, 5.0 * 0.01 / std::sqrt(n));
}

TEST(SynthRoundTrip, BadOptionsAreRejectedBeforeWriting) {
  const testing::ScopedTempDir dir("synth_round_trip");
  const config::Config cfg = testing::SynthConfig("static", "1500, 0, 5");
  synth::SynthOptions o;
  o.output = dir.file("never.h5");
  o.format = "npz";
  EXPECT_THROW(synth::WriteSyntheticDataset(cfg, o), Error);
  o.format = "aps_old";
  o.params["gamma_dot_t0"] = 0.1;  // not a static parameter
  EXPECT_THROW(synth::WriteSyntheticDataset(cfg, o), Error);
  o.params.clear();
  o.noise = -1;
  EXPECT_THROW(synth::WriteSyntheticDataset(cfg, o), Error);
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

}  // namespace
}  // namespace homodyne
