#pragma once
// 64-bit FNV-1a: the one hash behind run identities, checkpoint read digests, tuning-cache
// names, batch job keys and the run report's data fingerprint. Not cryptographic; it names
// and compares, it does not protect.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace homodyne {

// The standard offset basis.
inline constexpr std::uint64_t kFnv1aBasis = 14695981039346656037ULL;
// The basis that batch job keys and the run report's data fingerprint have always used (the
// standard one with its last digit dropped). Kept so that keys and fingerprints already stored
// in batch ledgers and reports still compare equal.
inline constexpr std::uint64_t kFnv1aShortBasis = 1469598103934665603ULL;

// FNV-1a of n bytes, continued from h: chained calls hash several pieces as one.
inline std::uint64_t Fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnv1aBasis) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

inline std::uint64_t Fnv1a(std::string_view s, std::uint64_t h = kFnv1aBasis) {
  return Fnv1a(s.data(), s.size(), h);
}

}  // namespace homodyne
