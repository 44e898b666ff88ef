#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace homodyne {
namespace {

constexpr std::uintptr_t kHugePageBytes = std::uintptr_t{2} << 20;

}  // namespace

bool HugePagesRefused() noexcept {
  static const bool refused = [] {
    const char* v = std::getenv("HOMODYNE_NO_HUGE_PAGES");
    return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
  }();
  return refused;
}

void AdviseHugePages(const void* begin, std::size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  if (begin == nullptr || bytes < kHugePageAdviceMinBytes || HugePagesRefused()) return;
  const auto first = reinterpret_cast<std::uintptr_t>(begin);
  const std::uintptr_t from = (first + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const std::uintptr_t to = (first + bytes) & ~(kHugePageBytes - 1);
  if (to <= from) return;
  // A hint only: EINVAL (no THP in this kernel) or ENOMEM leaves ordinary pages.
  (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
#else
  (void)begin;
  (void)bytes;
#endif
}

}  // namespace homodyne
