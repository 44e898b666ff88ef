// Progress: in place on a terminal, throttled log lines otherwise, nothing when quiet or
// off rank 0.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/errors.h"

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

// HOMODYNE_PROGRESS_INTERVAL replaces log_interval_s; a value that is not a number of
// seconds in (0, 3600] is bad input naming the variable.
TEST(Progress, IntervalFromTheEnvironment) {
  Logger log(0, LogLevel::kInfo, stdout, stdout);
  ProgressOptions o;
  o.in_place = false;
  ::setenv("HOMODYNE_PROGRESS_INTERVAL", "0.25", 1);
  EXPECT_DOUBLE_EQ(Progress(log, "CMC", o).interval(), 0.25);
  for (const char* bad : {"soon", "0", "-1", "1e9", "nan", "2s", ""}) {
    ::setenv("HOMODYNE_PROGRESS_INTERVAL", bad, 1);
    try {
      Progress q(log, "CMC", o);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("HOMODYNE_PROGRESS_INTERVAL"), std::string::npos);
    }
  }
  ::unsetenv("HOMODYNE_PROGRESS_INTERVAL");
  EXPECT_DOUBLE_EQ(Progress(log, "CMC", o).interval(), ProgressOptions{}.log_interval_s);
}

// The ticker calls its function on its own thread until it is destroyed, and not after.
TEST(ProgressTicker, TicksOnItsOwnThreadUntilDestroyed) {
  std::atomic<int> ticks{0};
  std::atomic<bool> other_thread{false};
  const auto caller = std::this_thread::get_id();
  {
    ProgressTicker t(0.001, [&] {
      other_thread = std::this_thread::get_id() != caller;
      ++ticks;
    });
    while (ticks.load() < 3) std::this_thread::yield();
  }
  const int at_end = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ticks.load(), at_end);
  EXPECT_TRUE(other_thread.load());
}

}  // namespace
}  // namespace homodyne
