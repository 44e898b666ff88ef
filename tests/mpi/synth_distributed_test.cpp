// Synthetic file → distributed load at any rank count → every local point equals the
// model at the true parameters (≤ 1e-12), for both layouts and LZF.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "io/distributed_loader.h"
#include "model/reference_model.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "parallel/collective.h"
#include "synth/synthetic_dataset.h"
#include "synth_fixture.h"

namespace homodyne {
namespace {

TEST(SynthDistributed, LocalPointsMatchTheModelAtTheTruth) {
  const Comm& world = testing::TestEnvironment().world();
  const config::Config cfg =
      testing::SynthConfig("laminar_flow", "8000, -0.4, 50, 0.004, -0.2, 0.0005, 4");
  const testing::MpiTempDir dir(world, "synth_distributed");
  for (const std::string format : {"aps_old", "aps_u_lzf"}) {
    const std::string path = dir.file("synth_" + format + ".h5");
    synth::SynthTruth truth;
    RunCollectively(world, [&] {
      synth::SynthOptions o;
      o.output = path;
      o.force = true;
      o.format = format == "aps_old" ? "aps_old" : "aps_u";
      o.lzf = format != "aps_old";
      o.frames = 50;
      o.phi_deg = {-45, 0, 45, 90};
      if (world.rank() == 0) truth = synth::WriteSyntheticDataset(cfg, o);
    });
    world.Barrier();
    truth = synth::ReadSyntheticTruth(path);

    io::LoadOptions lo;
    lo.path = path;
    lo.dt = truth.geometry.dt;
    lo.target_q = truth.geometry.q;
    const io::LocalData local = io::LoadDistributed(world, lo, Logger::Silent());

    model::reference::ModelInput in;
    in.mode = truth.mode;
    in.geometry = {local.meta.q_physics, truth.geometry.L, truth.geometry.dt};
    in.t = local.meta.t;
    in.phi_deg = local.meta.phi_values();
    in.physical = truth.physical;
    in.contrast = truth.contrast;
    in.offset = truth.offset;
    const auto ref = model::reference::Evaluate(in);
    double worst = 0.0;
    std::int64_t checked = 0;
    for (const auto& t : local.tiles) {
      for (std::int64_t c = 0; c < t.tile.count; ++c) {
        const double v = local.values[t.offset + static_cast<std::size_t>(c)];
        const double m = ref.C2(t.tile.angle, static_cast<int>(t.tile.row),
                                static_cast<int>(t.tile.col_begin + c));
        worst = std::max(worst, std::abs(v - m));
        ++checked;
      }
    }
    EXPECT_LE(worst, 1e-12) << format;
    std::int64_t total = 0;
    MPI_Allreduce(&checked, &total, 1, MPI_INT64_T, MPI_SUM, world.get());
    EXPECT_EQ(total, 4LL * 49 * 48 / 2) << format;
  }
}

}  // namespace
}  // namespace homodyne
