// Pure selection rules of the loader: q bins, phi normalisation/filtering, frames,
// time grid and the basic diagonal correction (docs/data.md, spec §1.5-1.6, §2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "io/selection.h"

namespace homodyne::io {
namespace {

using ::testing::ElementsAre;

TEST(ApsOldSelection, KeepsTheToleranceRingInFileOrder) {
  // q_sel = 0.0055 (closest to 0.0054); ring |q - 0.0055| <= 0.00055.
  const std::vector<double> dq = {0.0100, 0.0055, 0.0052, 0.0058, 0.0056, 0.0020, 0.0051, 0.0057};
  EXPECT_THAT(SelectApsOldBins(dq, 0.0054, 0.1), ElementsAre(1, 2, 3, 4, 6, 7));
}

TEST(ApsOldSelection, FewerThanFiveTakesTenClosestOrderedByDistance) {
  // Only 2 bins within 10% of q_sel = 0.005; then the 10 closest to q_sel by distance.
  // Exactly representable values k/256 so that equal distances are exactly equal.
  std::vector<double> dq;
  for (int i = 0; i < 12; ++i) dq.push_back((i + 1) / 256.0);
  // q_sel = 5/256 (index 4); the 10% ring holds only index 4 itself.
  const auto kept = SelectApsOldBins(dq, 5.1 / 256.0, 0.1);
  // Distances to 5/256: idx4=0, idx3,5=1/256 (tie: file order), idx2,6, idx1,7, idx0,8, idx9.
  EXPECT_THAT(kept, ElementsAre(4, 3, 5, 2, 6, 1, 7, 0, 8, 9));
}

TEST(ApsOldSelection, FewBinsTakesAllOfThem) {
  const std::vector<double> dq = {0.02, 0.0054, 0.01};
  EXPECT_THAT(SelectApsOldBins(dq, 0.0054, 0.1), ElementsAre(1, 2, 0));
}

TEST(ApsUSelection, ExactRingAroundTheClosestQ) {
  const std::vector<double> q = {0.0080, 0.0054, 0.0054, 0.0054 + 5e-11, 0.0054 + 2e-10, 0.0060};
  EXPECT_THAT(SelectApsUPairs(q, 0.0050), ElementsAre(1, 2, 3));
}

TEST(PhiNormalisation, FloorModIntoMinus180To180) {
  EXPECT_EQ(NormalizePhi(0.0), 0.0);
  EXPECT_EQ(NormalizePhi(-180.0), 180.0);
  EXPECT_EQ(NormalizePhi(180.0), 180.0);
  EXPECT_EQ(NormalizePhi(190.0), -170.0);
  EXPECT_EQ(NormalizePhi(-190.0), 170.0);
  EXPECT_EQ(NormalizePhi(540.0), 180.0);
  EXPECT_EQ(NormalizePhi(360.0), 0.0);
  EXPECT_EQ(NormalizePhi(-720.0), 0.0);
  EXPECT_FALSE(std::signbit(NormalizePhi(-360.0)));
  EXPECT_DOUBLE_EQ(NormalizePhi(-45.5), -45.5);
  EXPECT_DOUBLE_EQ(NormalizePhi(725.0), 5.0);
}

TEST(PhiFiltering, RangesAreOredAndMayWrapAround) {
  EXPECT_TRUE(PhiInRange(175.0, {170.0, -170.0}));
  EXPECT_TRUE(PhiInRange(-175.0, {170.0, -170.0}));
  EXPECT_FALSE(PhiInRange(0.0, {170.0, -170.0}));
  EXPECT_TRUE(PhiInRange(-10.0, {350.0, 10.0}));  // 350 normalises to -10
  const std::vector<double> phi = {-170.0, -90.0, 0.0, 5.0, 90.0, 178.0};
  PhiFilterOptions filter{true, {{-10.0, 10.0}, {170.0, -170.0}}};
  EXPECT_THAT(FilterPhi(phi, filter, Logger::Silent()), ElementsAre(0, 2, 3, 5));
  filter.enabled = false;
  EXPECT_THAT(FilterPhi(phi, filter, Logger::Silent()), ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST(PhiFiltering, NoMatchKeepsAllWithAWarning) {
  std::FILE* err = std::tmpfile();
  ASSERT_NE(err, nullptr);
  Logger logger(0, LogLevel::kInfo, err, err);
  const std::vector<double> phi = {0.0, 45.0};
  EXPECT_THAT(FilterPhi(phi, {true, {{100.0, 110.0}}}, logger), ElementsAre(0, 1));
  std::rewind(err);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, err);
  std::fclose(err);
  EXPECT_THAT(std::string(buf, n), ::testing::HasSubstr("keeping all 2 angles"));
}

TEST(PhiFiltering, DroppedAnglesAreNamedInAWarning) {
  std::FILE* err = std::tmpfile();
  ASSERT_NE(err, nullptr);
  Logger logger(0, LogLevel::kInfo, err, err);
  const std::vector<double> phi = {0.0, 45.0, 90.0};
  EXPECT_THAT(FilterPhi(phi, {true, {{-10.0, 50.0}}, true, "phi_filtering"}, logger),
              ElementsAre(0, 1));
  std::rewind(err);
  char buf[512] = {};
  const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, err);
  std::fclose(err);
  const std::string text(buf, n);
  EXPECT_THAT(text,
              ::testing::HasSubstr("warning: phi_filtering kept 2 of 3 angles; dropped 90 deg"));
  EXPECT_THAT(text, ::testing::HasSubstr("phi_filtering.target_ranges"));
}

TEST(FrameSlicing, ClampsAndResolvesNegativeEnd) {
  FrameRange r = ResolveFrames(0, -1, 100, "f.h5");
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.count, 100);
  EXPECT_EQ(r.end_frame, 100);
  r = ResolveFrames(11, 500, 100);
  EXPECT_EQ(r.begin, 10);
  EXPECT_EQ(r.count, 90);
  r = ResolveFrames(5, 5, 100);
  EXPECT_EQ(r.count, 1);
  r = ResolveFrames(3, -7, 50);
  EXPECT_EQ(r.end_frame, 50);
}

TEST(FrameSlicing, EndBeforeStartIsBadInputNamingFileAndKey) {
  try {
    ResolveFrames(50, 20, 100, "data.h5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.context().file, "data.h5");
    EXPECT_EQ(e.context().key, "end_frame");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("end_frame (20) is before start_frame (50)"));
  }
  EXPECT_THROW(ResolveFrames(120, -1, 100), Error);  // start beyond the last frame
}

TEST(TimeGrid, IsNumpyLinspaceFromZero) {
  const double dt = 0.1;
  const auto t = LoaderTimeGrid(dt, 11);
  ASSERT_EQ(t.size(), 11u);
  EXPECT_EQ(t[0], 0.0);
  EXPECT_EQ(t[10], dt * 10.0);
  for (int i = 0; i < 11; ++i) EXPECT_NEAR(t[i], dt * i, 1e-15);
  EXPECT_EQ(LoaderTimeGrid(2.0, 1), std::vector<double>{0.0});
}

TEST(DiagonalCorrection, UsesNeighbouringOffDiagonals) {
  // 4x4: C[m,m+1] = {1, 3, 5}, C[m+1,m] = {2, 4, 6} -> sb = {1.5, 3.5, 5.5}.
  std::vector<double> c = {9, 1, 0, 0,  //
                           2, 9, 3, 0,  //
                           0, 4, 9, 5,  //
                           0, 0, 6, 9};
  ApplyBasicDiagonalCorrection(c, 4);
  EXPECT_EQ(c[0], 1.5);
  EXPECT_EQ(c[5], 2.5);
  EXPECT_EQ(c[10], 4.5);
  EXPECT_EQ(c[15], 5.5);
  EXPECT_EQ(c[1], 1.0);  // off-diagonal untouched
  std::vector<double> one = {7.0};
  ApplyBasicDiagonalCorrection(one, 1);
  EXPECT_EQ(one[0], 7.0);
}

TEST(LoadOptions, ValidateRejectsBadValuesNamingTheKey) {
  LoadOptions o;
  o.path = "x.h5";
  o.dt = -1.0;
  try {
    o.Validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(e.context().key, "dt");
    EXPECT_EQ(e.context().file, "x.h5");
  }
  o.dt = 0.5;
  EXPECT_NO_THROW(o.Validate());
  o.dt = std::nan("");
  EXPECT_THROW(o.Validate(), Error);
}

}  // namespace
}  // namespace homodyne::io
