// Streaming (out-of-core) NLSQ fits against in-core fits of the same synthetic files, and
// the exact streaming order statistics they rely on, at whatever rank count the test runs
// with (ctest: 1 and 2 ranks).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <filesystem>
#include <random>

#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "mpi_temp_dir.h"
#include "mpi_test_env.h"
#include "nlsq/block_stream.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/collective.h"
#include "parallel/order_statistics.h"
#include "parallel/radix_select.h"
#include "synth/synthetic_dataset.h"

namespace homodyne::nlsq {
namespace {

struct Case {
  std::string mode;
  std::string truth;
  std::string start;
  std::string per_angle;
  std::vector<double> phi;
  int frames = 90;
};

config::Config MakeConfig(const Case& c, const std::string& values, const std::string& file) {
  const bool laminar = c.mode == "laminar_flow";
  const auto path = std::filesystem::path(file);
  const std::string yaml =
      "analysis_mode: " + c.mode +
      "\nanalyzer_parameters:\n  dt: 0.1\n  start_frame: 1\n  end_frame: -1\n"
      "  scattering:\n    wavevector_q: 0.0054\n"
      "  geometry:\n    stator_rotor_gap: 2000000\n"
      "experimental_data:\n  data_folder_path: " +
      path.parent_path().string() + "\n  data_file_name: " + path.filename().string() +
      "\ninitial_parameters:\n  parameter_names: [D0, alpha, D_offset" +
      (laminar ? ", gamma_dot_t0, beta, gamma_dot_t_offset, phi0" : "") + "]\n  values: [" +
      values + "]\noptimization:\n  nlsq:\n    max_iterations: 200\n" +
      "    anti_degeneracy:\n      per_angle_mode: " + c.per_angle + "\n";
  return config::ReadConfigString(yaml, "nlsq-streaming-test", config::ReadOptions{});
}

// Writes the dataset (rank 0) into `dir` and returns its path on every rank. aps_u files are
// compressed with LZF (chunked: read through HDF5).
std::string WriteData(const testing::MpiTempDir& dir, const Case& c, const std::string& name,
                      const std::string& format = "aps_old") {
  const Comm& world = testing::TestEnvironment().world();
  const std::string path = dir.file("stream_" + name + ".h5");
  RunCollectively(world, [&] {
    if (world.rank() != 0) return;
    synth::SynthOptions o;
    o.output = path;
    o.force = true;
    o.format = format;
    o.lzf = format == "aps_u";
    o.frames = c.frames;
    o.phi_deg = c.phi;
    o.noise = 1e-3;
    o.seed = 7;
    o.contrast = 0.3;
    o.offset = 1.0;
    synth::WriteSyntheticDataset(MakeConfig(c, c.truth, path), o);
  });
  world.Barrier();
  return path;
}

NlsqRunResult Fit(const Case& c, const std::string& path, FitStrategy strategy,
                  std::int64_t window = 0, int threads = 1) {
  NlsqRunOptions o;
  o.print_progress = false;
  o.threads = threads;
  o.strategy = strategy;
  o.stream_window_points = window;
  return RunNlsqFit(testing::TestEnvironment().world(), MakeConfig(c, c.start, path), o,
                    Logger::Silent());
}

double RelDiff(double a, double b) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300});
}

void ExpectSameFit(const NlsqRunResult& in_core, const NlsqRunResult& streamed) {
  ASSERT_TRUE(in_core.summary.IsUsable());
  ASSERT_TRUE(streamed.summary.IsUsable());
  EXPECT_EQ(in_core.memory.strategy, FitStrategy::kInCore);
  EXPECT_EQ(streamed.memory.strategy, FitStrategy::kStreaming);
  EXPECT_EQ(in_core.summary.iterations, streamed.summary.iterations);
  EXPECT_EQ(in_core.passes, streamed.passes);
  ASSERT_EQ(in_core.expanded.size(), streamed.expanded.size());
  // The starting point (initial scaling from the streamed data) and the result.
  for (std::size_t i = 0; i < in_core.expanded.size(); ++i) {
    EXPECT_LE(RelDiff(in_core.initial_expanded[i], streamed.initial_expanded[i]), 1e-10)
        << in_core.expanded_names[i];
    EXPECT_LE(RelDiff(in_core.expanded[i], streamed.expanded[i]), 1e-10)
        << in_core.expanded_names[i];
    EXPECT_LE(RelDiff(in_core.expanded_uncertainty[i], streamed.expanded_uncertainty[i]), 1e-10)
        << in_core.expanded_names[i];
  }
  EXPECT_LE(RelDiff(in_core.report.chi_squared, streamed.report.chi_squared), 1e-10);
  // The design goal is stronger: every block's partial sums are the in-core bits.
  EXPECT_EQ(std::bit_cast<std::uint64_t>(in_core.report.chi_squared),
            std::bit_cast<std::uint64_t>(streamed.report.chi_squared));
  EXPECT_EQ(in_core.expanded, streamed.expanded);
  EXPECT_EQ(in_core.report.diagnostics.chi2_per_angle, streamed.report.diagnostics.chi2_per_angle);
}

const StagePasses* FindStage(const NlsqRunResult& r, const std::string& stage) {
  for (const StagePasses& s : r.pass_stages) {
    if (s.stage == stage) return &s;
  }
  return nullptr;
}

int TotalPasses(const NlsqRunResult& r) {
  int n = 0;
  for (const StagePasses& s : r.pass_stages) n += s.total();
  return n;
}

int Kind(const StagePasses& s, PassKind k) { return s.by_kind[static_cast<std::size_t>(k)]; }

// The pass ledger of a robust (soft_l1, the default) fit: every streamed pass read the stream
// once; the report's plain χ² and χ² per angle took two passes in core and one streamed
// (fused), the solve and the noise level the same passes and steps. (The initial scaling's
// passes replay kept values once they fit in a quarter of a window, so their number depends
// on the window size: at most the six of the radix selection.)
void ExpectPassesCounted(const NlsqRunResult& in_core, const NlsqRunResult& streamed) {
  EXPECT_EQ(in_core.stream_reads, -1);
  EXPECT_EQ(streamed.stream_reads, TotalPasses(streamed));
  const StagePasses* scaling_ic = FindStage(in_core, "initial_scaling");
  const StagePasses* scaling_st = FindStage(streamed, "initial_scaling");
  ASSERT_NE(scaling_ic, nullptr);
  ASSERT_NE(scaling_st, nullptr);
  EXPECT_LE(scaling_st->total(), 6);
  EXPECT_LE(scaling_ic->total(), 6);
  EXPECT_EQ(TotalPasses(streamed) - scaling_st->total(),
            TotalPasses(in_core) - scaling_ic->total() - 1);
  const StagePasses* ic = FindStage(in_core, "report");
  const StagePasses* st = FindStage(streamed, "report");
  ASSERT_NE(ic, nullptr);
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(Kind(*ic, PassKind::kChi2), 1);
  EXPECT_EQ(Kind(*ic, PassKind::kModel), 1);
  EXPECT_EQ(Kind(*st, PassKind::kFused), 1);
  EXPECT_EQ(Kind(*st, PassKind::kModel) + Kind(*st, PassKind::kChi2), 0);
  for (const char* stage : {"fit", "noise_level"}) {
    const StagePasses* a = FindStage(in_core, stage);
    const StagePasses* b = FindStage(streamed, stage);
    ASSERT_NE(a, nullptr) << stage;
    ASSERT_NE(b, nullptr) << stage;
    EXPECT_GT(a->total(), 0) << stage;
    EXPECT_EQ(a->by_kind, b->by_kind) << stage;
    EXPECT_EQ(a->accepted_steps, b->accepted_steps) << stage;
  }
  EXPECT_EQ(FindStage(streamed, "fit")->accepted_steps, streamed.summary.iterations);
}

const Case kStatic{"static", "3000, -0.6, 20", "1000, 0.0, 0.0", "individual", {0, 60, 120}};
const Case kLaminar{"laminar_flow",
                    "20000, -0.4, 10, 0.003, 0.2, 0.0002, 4",
                    "10000, -0.2, 20, 0.002, 0.1, 0.0001, 2",
                    "auto",
                    {-30, 0, 30, 60, 90}};

TEST(NlsqStreaming, StaticStreamingEqualsInCore) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_streaming");
  const auto path = WriteData(dir, kStatic, "static");
  const NlsqRunResult a = Fit(kStatic, path, FitStrategy::kInCore);
  // Windows of ~1/10 of a rank's points: several windows per rank and per pass.
  const std::int64_t window = a.unique_pairs / testing::TestEnvironment().world().size() / 10;
  const NlsqRunResult b = Fit(kStatic, path, FitStrategy::kStreaming, window);
  EXPECT_LE(b.memory.window_points, std::max<std::int64_t>(window, 1) * 2);
  ExpectSameFit(a, b);
  ExpectPassesCounted(a, b);
}

TEST(NlsqStreaming, LaminarStreamingEqualsInCoreWithThreads) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_streaming");
  const auto path = WriteData(dir, kLaminar, "laminar");
  const NlsqRunResult a = Fit(kLaminar, path, FitStrategy::kInCore, 0, 2);
  const std::int64_t window = a.unique_pairs / testing::TestEnvironment().world().size() / 7;
  const NlsqRunResult b = Fit(kLaminar, path, FitStrategy::kStreaming, window, 2);
  ExpectSameFit(a, b);
}

TEST(NlsqStreaming, AutoChoosesInCoreWhenTheBudgetAllows) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_streaming");
  const auto path = WriteData(dir, kStatic, "static_auto");
  const NlsqRunResult r = Fit(kStatic, path, FitStrategy::kAuto);
  // The default budget (75 % of the node's RAM) holds this small dataset.
  EXPECT_EQ(r.memory.strategy, FitStrategy::kInCore);
  EXPECT_GT(r.memory.budget.bytes, r.memory.in_core.total());
  EXPECT_GE(r.memory.in_core.data,
            8u * static_cast<std::uint64_t>(r.unique_pairs) /
                static_cast<std::uint64_t>(testing::TestEnvironment().world().size() + 1));
}

// The streamed windows hold exactly the loader's values (frame selection, C = H + Hᵀ),
// tile for tile, in both file layouts (aps_u compressed with LZF).
TEST(NlsqStreaming, StreamedValuesEqualLoadedValuesWithFrameSelection) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_streaming");
  const Comm& world = testing::TestEnvironment().world();
  for (const std::string format : {"aps_old", "aps_u"}) {
    const std::string path = WriteData(dir, kStatic, "values_" + format, format);
    config::Config cfg = MakeConfig(kStatic, kStatic.start, path);
    cfg.analyzer.start_frame = 5;
    cfg.analyzer.end_frame = 70;
    const io::LoadOptions lo = LoadOptionsFromConfig(cfg, "");
    const io::LocalData in = io::LoadDistributed(world, lo, Logger::Silent());
    const io::LocalData layout = io::LoadDistributedLayout(world, lo, Logger::Silent());
    ASSERT_EQ(layout.meta.n_frames, 66) << format;
    EXPECT_TRUE(layout.values.empty());
    ASSERT_EQ(layout.tiles.size(), in.tiles.size());
    EXPECT_EQ(layout.diagonal, in.diagonal);
    BlockStream stream(world, layout, std::max<std::int64_t>(in.local_points() / 5, 1), 100);
    EXPECT_EQ(stream.local_points(), in.local_points());
    std::size_t next = 0;
    std::int64_t seen = 0;
    for (int w = 0; w < stream.num_windows(); ++w) {
      const StreamWindow& win = stream.Load(w);
      std::size_t in_block = 0;
      for (const auto& block : win.blocks) in_block += block.size();
      ASSERT_EQ(in_block, win.tiles.size());
      for (const io::LocalTile& t : win.tiles) {
        const io::LocalTile& ref = in.tiles.at(next++);
        ASSERT_EQ(t.tile, ref.tile);
        for (std::int64_t c = 0; c < t.tile.count; ++c) {
          const double a = win.values[t.offset + static_cast<std::size_t>(c)];
          const double b = in.values[ref.offset + static_cast<std::size_t>(c)];
          ASSERT_EQ(std::bit_cast<std::uint64_t>(a), std::bit_cast<std::uint64_t>(b))
              << format << " angle " << t.tile.angle << " row " << t.tile.row;
        }
        seen += t.tile.count;
      }
    }
    EXPECT_EQ(next, in.tiles.size());
    EXPECT_EQ(seen, in.local_points());
    if (in.local_points() > 5) {
      EXPECT_GT(stream.num_windows(), 1);
    }
  }
}

// From the second pass on, a half matrix read with pread is read ahead: each Load starts the
// next window (the first after the last) on another thread. The windows keep the loader's
// bits in order and out of order; a file read through HDF5 (aps_u, LZF) is never read ahead;
// a read-ahead that fails throws from the Load that wanted its window, naming the file.
TEST(NlsqStreaming, TheNextWindowIsReadAheadWithTheSameBits) {
  const testing::MpiTempDir dir(testing::TestEnvironment().world(), "nlsq_read_ahead");
  const Comm& world = testing::TestEnvironment().world();
  for (const std::string format : {"aps_old", "aps_u"}) {
    const std::string path = WriteData(dir, kStatic, "ahead_" + format, format);
    const config::Config cfg = MakeConfig(kStatic, kStatic.start, path);
    const io::LoadOptions lo = LoadOptionsFromConfig(cfg, "");
    const io::LocalData in = io::LoadDistributed(world, lo, Logger::Silent());
    const io::LocalData layout = io::LoadDistributedLayout(world, lo, Logger::Silent());
    ASSERT_GT(in.local_points(), 100);
    const std::int64_t window = in.local_points() / 5;
    std::atomic<int> threads_started = 0;
    BlockStream stream(world, layout, window, window, [&threads_started] { ++threads_started; });
    ASSERT_GT(stream.num_windows(), 2);
    // Window w against the in-core values, bit for bit.
    const auto check = [&](int w) {
      const StreamWindow& win = stream.Load(w);
      std::size_t next = 0;
      for (const auto& block : win.blocks) {
        for (const model::RowTile& t : block) {
          const io::LocalTile& lt = win.tiles.at(next++);
          const auto ref = std::find_if(in.tiles.begin(), in.tiles.end(),
                                        [&](const auto& x) { return x.tile == lt.tile; });
          ASSERT_NE(ref, in.tiles.end());
          for (int c = 0; c < t.count; ++c) {
            ASSERT_EQ(std::bit_cast<std::uint64_t>(t.data[c]),
                      std::bit_cast<std::uint64_t>(in.values[ref->offset + c]))
                << format << " window " << w << " angle " << lt.tile.angle << " row "
                << lt.tile.row;
          }
        }
      }
      ASSERT_EQ(next, win.tiles.size());
    };
    const int n = stream.num_windows();
    for (int w = 0; w < n; ++w) check(w);  // the first pass finds the lower triangles zero
    EXPECT_EQ(stream.windows_read_ahead(), 0);
    for (int pass = 0; pass < 2; ++pass) {
      for (int w = 0; w < n; ++w) check(w);
    }
    check(n - 1);  // out of order: the read-ahead of window 0 is discarded
    check(1);
    check(2);
    const bool direct = format == "aps_old";
    EXPECT_EQ(stream.windows_read_ahead(), direct ? 2 * n + 1 : 0) << format;
    EXPECT_EQ(threads_started > 0, direct) << format;
  }

  // A file cut short under a stream that reads ahead: the error comes from a Load, names the
  // file, and the stream closes cleanly.
  const std::string path = WriteData(dir, kStatic, "ahead_cut");
  const config::Config cfg = MakeConfig(kStatic, kStatic.start, path);
  const io::LocalData layout =
      io::LoadDistributedLayout(world, LoadOptionsFromConfig(cfg, ""), Logger::Silent());
  const std::int64_t window = std::max<std::int64_t>(layout.local_points() / 5, 1);
  std::string message;
  {
    BlockStream stream(world, layout, window, window);
    for (int w = 0; w < stream.num_windows(); ++w) stream.Load(w);
    world.Barrier();
    RunCollectively(world, [&] {
      if (world.rank() == 0) std::filesystem::resize_file(path, 4096);
    });
    try {
      for (int w = 0; w < stream.num_windows(); ++w) stream.Load(w);
    } catch (const Error& e) {
      message = e.what();
    }
  }
  EXPECT_NE(message.find("ahead_cut"), std::string::npos) << message;
  EXPECT_NE(message.find("the file ends before the dataset does"), std::string::npos) << message;
}

// RadixSelect against the bisection of order_statistics.h on weighted multisets spread
// over the ranks (duplicates, negatives, ±0).
TEST(RadixSelect, EqualsDistributedKthSmallest) {
  const Comm& world = testing::TestEnvironment().world();
  std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(world.rank()));
  std::normal_distribution<double> normal(1.0, 0.3);
  std::vector<double> a, b;  // set 0: a (weight 2) + b (weight 1); set 1: a only
  for (int i = 0; i < 3000; ++i) a.push_back(i % 17 == 0 ? 1.25 : normal(rng));
  for (int i = 0; i < 500; ++i)
    b.push_back(i % 50 == 0 ? (i % 100 == 0 ? 0.0 : -0.0) : -normal(rng));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  RadixSelect select(2);
  auto pass = [&] {
    for (double v : a) {
      select.Add(0, v, 2);
      select.Add(1, v, 1);
    }
    for (double v : b) select.Add(0, v, 1);
  };
  pass();
  select.FinishPass(world);
  const std::int64_t n0 = select.count(0);
  const std::int64_t n1 = select.count(1);
  EXPECT_EQ(n0, world.size() * (2 * 3000 + 500));
  EXPECT_EQ(n1, world.size() * 3000);
  const std::vector<std::int64_t> ks0 = {0, 1, n0 / 10, n0 / 2, n0 / 2 + 1, n0 - 2, n0 - 1};
  const std::vector<std::int64_t> ks1 = {0, n1 / 3, n1 - 1};
  std::vector<int> q0, q1;
  for (auto k : ks0) q0.push_back(select.AddQuery(0, k));
  for (auto k : ks1) q1.push_back(select.AddQuery(1, k));
  const std::vector<double> ps = {0.0, 10.0, 37.5, 90.0, 100.0};
  std::vector<std::pair<int, int>> qp;
  for (double p : ps) {
    const PercentileRanks r = PercentileRanksOf(n0, p);
    qp.emplace_back(select.AddQuery(0, r.lo), r.single ? -1 : select.AddQuery(0, r.lo + 1));
  }
  int passes = 1;
  while (!select.done()) {
    pass();
    select.FinishPass(world);
    ++passes;
  }
  EXPECT_EQ(passes, 6);  // set 0's smallest values are negative: no typical value given
  const std::array<WeightedRun, 2> runs0{{{a, 2}, {b, 1}}};
  const std::array<WeightedRun, 1> runs1{{{a, 1}}};
  for (std::size_t i = 0; i < ks0.size(); ++i) {
    const double want = DistributedKthSmallest(world, runs0, ks0[i]);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(select.result(q0[i])),
              std::bit_cast<std::uint64_t>(want))
        << "k = " << ks0[i];
  }
  for (std::size_t i = 0; i < ks1.size(); ++i) {
    const double want = DistributedKthSmallest(world, runs1, ks1[i]);
    EXPECT_EQ(select.result(q1[i]), want) << "k = " << ks1[i];
  }
  // Percentiles combined as DistributedPercentile does.
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const PercentileRanks r = PercentileRanksOf(n0, ps[i]);
    const double got = CombinePercentile(r, select.result(qp[i].first),
                                         qp[i].second < 0 ? 0.0 : select.result(qp[i].second));
    EXPECT_EQ(got, DistributedPercentile(world, runs0, ps[i])) << "p = " << ps[i];
  }
}

// With a typical value, queries on the values sharing its first digit resolve one pass
// sooner, with the same bits; the others take the six passes.
TEST(RadixSelect, ATypicalValueSavesAPassWithTheSameResults) {
  const Comm& world = testing::TestEnvironment().world();
  std::mt19937_64 rng(99 + static_cast<std::uint64_t>(world.rank()));
  std::uniform_real_distribution<double> near_one(0.6, 1.9), far(2.5, 40.0);
  std::vector<double> a, b;  // set 0: values in [0.5, 2), 1.0's first digit; set 1: also far
  for (int i = 0; i < 4000; ++i) a.push_back(i % 23 == 0 ? 1.0 : near_one(rng));
  for (int i = 0; i < 1000; ++i) b.push_back(far(rng));
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const std::array<WeightedRun, 1> runs0{{{a, 1}}};
  const std::array<WeightedRun, 2> runs1{{{a, 2}, {b, 1}}};
  for (const bool typical : {false, true}) {
    for (const bool ask_far : {false, true}) {
      RadixSelect select = typical ? RadixSelect(2, 1.0) : RadixSelect(2);
      auto pass = [&] {
        for (double v : a) {
          select.Add(0, v, 1);
          select.Add(1, v, 2);
        }
        for (double v : b) select.Add(1, v, 1);
      };
      pass();
      select.FinishPass(world);
      const std::int64_t n0 = select.count(0), n1 = select.count(1);
      const std::vector<std::int64_t> ks0 = {0, n0 / 7, n0 / 2, n0 - 1};
      std::vector<int> q0;
      for (auto k : ks0) q0.push_back(select.AddQuery(0, k));
      const int q1 = ask_far ? select.AddQuery(1, n1 - 1) : -1;  // the largest: b's, not near 1
      int passes = 1;
      while (!select.done()) {
        pass();
        select.FinishPass(world);
        ++passes;
      }
      EXPECT_EQ(passes, typical && !ask_far ? 5 : 6) << typical << ask_far;
      for (std::size_t i = 0; i < ks0.size(); ++i) {
        EXPECT_EQ(std::bit_cast<std::uint64_t>(select.result(q0[i])),
                  std::bit_cast<std::uint64_t>(DistributedKthSmallest(world, runs0, ks0[i])))
            << "k = " << ks0[i] << (typical ? " with" : " without") << " a typical value";
      }
      if (ask_far) {
        EXPECT_EQ(select.result(q1), DistributedKthSmallest(world, runs1, n1 - 1));
      }
    }
  }
}

}  // namespace
}  // namespace homodyne::nlsq
