// Large buffers on transparent huge pages.
//
// Where the kernel's transparent huge pages are in `madvise` mode (Debian's and Ubuntu's
// default), an anonymous buffer is faulted in 4 KiB at a time unless it asks for more. A
// buffer of the data's size (hundreds of MB) then costs one page fault per 4 KiB the first
// time it is written, and on a virtual machine whose host backs memory lazily each of those
// faults is dearer still. Advised before it is first touched, the same buffer takes one
// fault per 2 MiB. The values are the same either way; only the paging differs.
#pragma once

#include <cstddef>
#include <vector>

namespace homodyne {

// Buffers below this size are left to the allocator as they are (2 huge pages).
inline constexpr std::size_t kHugePageAdviceMinBytes = std::size_t{4} << 20;

// Asks the kernel to back the whole 2 MiB pages inside [begin, begin + bytes) with huge pages
// (madvise MADV_HUGEPAGE). A hint: nothing happens below kHugePageAdviceMinBytes, where the
// kernel has no transparent huge pages, or when HOMODYNE_NO_HUGE_PAGES=1 (read once per
// process). Pages already touched keep their size.
void AdviseHugePages(const void* begin, std::size_t bytes) noexcept;

// HOMODYNE_NO_HUGE_PAGES is set to anything but "" or "0": AdviseHugePages does nothing.
bool HugePagesRefused() noexcept;

// Gives v room for n values, on huge pages where AdviseHugePages can: call it before the
// resize or assign that first writes a large buffer. The values v holds are kept.
template <class T>
void ReserveOnHugePages(std::vector<T>& v, std::size_t n) {
  if (v.capacity() >= n) return;
  std::vector<T> fresh;
  fresh.reserve(n);
  AdviseHugePages(fresh.data(), n * sizeof(T));
  fresh.insert(fresh.end(), v.begin(), v.end());
  v.swap(fresh);
}

// v.resize(n), its room on huge pages where AdviseHugePages can: for a buffer that is
// about to be written whole.
template <class T>
void ResizeOnHugePages(std::vector<T>& v, std::size_t n) {
  ReserveOnHugePages(v, n);
  v.resize(n);
}

// n value-initialised values, on huge pages where AdviseHugePages can.
template <class T>
std::vector<T> VectorOnHugePages(std::size_t n) {
  std::vector<T> v;
  ResizeOnHugePages(v, n);
  return v;
}

}  // namespace homodyne
