// Progress: in place on a terminal, throttled log lines otherwise, nothing when quiet or
// off rank 0.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace homodyne {
namespace {

std::string ReadAll(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  return s;
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = 0; (p = s.find(what, p)) != std::string::npos; p += what.size()) ++n;
  return n;
}

TEST(Progress, InPlaceRedrawsOneLineAndEndsItOnce) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Logger log(0, LogLevel::kInfo, f, f);
  {
    ProgressOptions o;
    o.in_place = true;
    o.min_interval_s = 0.0;
    o.stream = f;
    Progress q(log, "CMC", o);
    EXPECT_TRUE(q.in_place());
    q.Update("shard 1 of 3, longer text");
    q.Update("shard 2 of 3");
    q.Done("3 shards");
    q.Update("ignored after Done");
  }
  const std::string s = ReadAll(f);
  std::fclose(f);
  EXPECT_EQ(Count(s, "\r"), 3);
  EXPECT_EQ(Count(s, "\n"), 1);
  EXPECT_EQ(s.find("ignored"), std::string::npos);
  // The last redraw covers the longer first line with blanks and ends the line.
  const std::string last = s.substr(s.rfind('\r') + 1);
  EXPECT_EQ(last.rfind("CMC: 3 shards", 0), 0u);
  EXPECT_EQ(last.size(), std::string("CMC: shard 1 of 3, longer text").size() + 1);
}

TEST(Progress, DestructorEndsAnOpenLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Logger log(0, LogLevel::kInfo, f, f);
  {
    ProgressOptions o;
    o.in_place = true;
    o.stream = f;
    Progress p(log, "NLSQ", o);
    p.Update("iteration 1");
  }
  const std::string s = ReadAll(f);
  std::fclose(f);
  EXPECT_EQ(s, "\rNLSQ: iteration 1\n");
}

TEST(Progress, LogLinesAreThrottledButTheFinalStateIsAlwaysWritten) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Logger log(0, LogLevel::kInfo, f, f);
  {
    ProgressOptions o;
    o.in_place = false;
    o.log_interval_s = 3600.0;
    Progress p(log, "loading", o);
    EXPECT_FALSE(p.in_place());
    p.Update("angle 1/3");
    p.Update("angle 2/3");
    p.Update("angle 3/3");
    p.Done("3 angles");
  }
  const std::string s = ReadAll(f);
  std::fclose(f);
  EXPECT_EQ(s, "loading: angle 1/3\nloading: 3 angles\n");
}

TEST(Progress, SilentWhenQuietOrNotRankZero) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Logger quiet(0, LogLevel::kError, f, f);
  Logger other(1, LogLevel::kInfo, f, f);
  for (const Logger* log : {&quiet, &other}) {
    ProgressOptions o;
    o.in_place = true;
    o.stream = f;
    Progress p(*log, "CMC", o);
    EXPECT_FALSE(p.active());
    p.Update("x");
    p.Done("y");
  }
  EXPECT_EQ(ReadAll(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace homodyne
