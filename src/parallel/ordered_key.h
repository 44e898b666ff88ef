// Order-preserving map of doubles to unsigned 64-bit integers (private to src/parallel):
// a < b ⇔ OrderedKey(a) < OrderedKey(b) for finite doubles (−0 sorts just below +0).
// Shared by the distributed exact selections (order_statistics.cpp, radix_select.cpp).
#pragma once

#include <cstdint>
#include <cstring>

namespace homodyne::detail {

inline constexpr std::uint64_t kSignBit = 0x8000000000000000ULL;

inline std::uint64_t OrderedKey(double x) {
  std::uint64_t b = 0;
  std::memcpy(&b, &x, sizeof(b));
  return (b & kSignBit) != 0 ? ~b : (b | kSignBit);
}

inline double FromOrderedKey(std::uint64_t k) {
  const std::uint64_t b = (k & kSignBit) != 0 ? (k & ~kSignBit) : ~k;
  double x = 0;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

}  // namespace homodyne::detail
