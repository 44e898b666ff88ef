#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace homodyne {
namespace {

// The kernel's transparent huge page mode: the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled ("always", "madvise", "never"), or "".
std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return {};
  return line.substr(open + 1, close - open - 1);
}

// kB of anonymous huge pages in the mapping of /proc/self/smaps that holds `address`, or -1.
long AnonHugeKiBAt(const void* address) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from <= a && a < to;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stol(line.substr(line.find(':') + 1));
    }
  }
  return -1;
}

TEST(HugePages, ReserveKeepsTheValuesItHolds) {
  std::vector<double> v{1.0, 2.0, 3.0};
  ReserveOnHugePages(v, std::size_t{1} << 21);  // 16 MiB
  ASSERT_GE(v.capacity(), std::size_t{1} << 21);
  EXPECT_EQ(v, (std::vector<double>{1.0, 2.0, 3.0}));
  const double* before = v.data();
  ReserveOnHugePages(v, 10);  // room enough already: nothing moves
  EXPECT_EQ(v.data(), before);
}

TEST(HugePages, VectorOnHugePagesIsValueInitialised) {
  const std::vector<double> v = VectorOnHugePages<double>(std::size_t{1} << 20);
  ASSERT_EQ(v.size(), std::size_t{1} << 20);
  for (std::size_t i = 0; i < v.size(); i += 4099) ASSERT_EQ(v[i], 0.0) << i;
}

// Where the kernel offers transparent huge pages, a large buffer written after the advice
// is backed by them: the point of the advice (one page fault per 2 MiB, not per 4 KiB).
TEST(HugePages, LargeBufferWrittenAfterTheAdviceIsOnHugePages) {
  const std::string mode = ThpMode();
  if (mode != "always" && mode != "madvise") {
    GTEST_SKIP() << "transparent huge pages: '" << mode << "'";
  }
  if (HugePagesRefused()) GTEST_SKIP() << "HOMODYNE_NO_HUGE_PAGES is set";
  std::vector<double> v;
  ReserveOnHugePages(v, std::size_t{8} << 20);  // 64 MiB
  v.assign(v.capacity(), 1.0);
  const long kib = AnonHugeKiBAt(v.data() + v.size() / 2);
  ASSERT_GE(kib, 0) << "no mapping holds the buffer in /proc/self/smaps";
  EXPECT_GT(kib, 0) << "the buffer's mapping has no huge pages (THP mode " << mode << ")";
}

}  // namespace
}  // namespace homodyne
