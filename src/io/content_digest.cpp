#include "io/content_digest.h"

#include <cstring>

#include <fmt/format.h>

#include "core/simd_clones.h"

namespace homodyne::io {
namespace {

// SplitMix64's finaliser: a bijection of 64-bit words whose output bits each depend on
// every input bit.
std::uint64_t Mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint32_t kFitted = 1;
constexpr std::uint32_t kDiagonal = 2;
constexpr std::uint32_t kFirstRow = 3;

}  // namespace

void ContentDigest::Add(std::uint32_t kind, std::size_t angle, std::int64_t i, std::int64_t j,
                        double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  // The key packs (kind, angle, i, j) into two words before mixing; i and j stay below 2³²
  // (a matrix side of 4·10⁹ frames would hold 10¹⁹ points).
  const std::uint64_t key_a =
      (static_cast<std::uint64_t>(kind) << 48) ^ static_cast<std::uint64_t>(angle);
  const std::uint64_t key_b = (static_cast<std::uint64_t>(i) << 32) ^ static_cast<std::uint64_t>(j);
  const std::uint64_t key = Mix(key_a ^ Mix(key_b));
  lane_[0] += Mix(bits ^ key);
  lane_[1] += Mix((bits + 0x9e3779b97f4a7c15ULL) ^ Mix(key ^ 0xd6e8feb86659fd93ULL));
}

// Compiled for each instruction set: with AVX-512's 64-bit multiplies the loop over a tile's
// values runs in vectors, and the lanes' sums (modulo 2⁶⁴, in any order) are the same.
HOMODYNE_SIMD_CLONES void ContentDigest::AddTiles(const std::vector<LocalTile>& tiles,
                                                  const double* values) {
  for (const LocalTile& lt : tiles) {
    const double* v = values + lt.offset;
    for (std::int64_t c = 0; c < lt.tile.count; ++c) {
      Add(kFitted, static_cast<std::size_t>(lt.tile.angle), lt.tile.row, lt.tile.col_begin + c,
          v[c]);
    }
  }
}

void ContentDigest::AddReplicated(const LocalData& local) {
  for (std::size_t a = 0; a < local.diagonal.size(); ++a) {
    const auto& d = local.diagonal[a];
    for (std::size_t i = 0; i < d.size(); ++i) {
      const auto ii = static_cast<std::int64_t>(i);
      Add(kDiagonal, a, ii, ii, d[i]);
    }
  }
  for (std::size_t a = 0; a < local.first_row.size(); ++a) {
    const auto& r = local.first_row[a];
    for (std::size_t j = 1; j < r.size(); ++j)
      Add(kFirstRow, a, 0, static_cast<std::int64_t>(j), r[j]);
  }
}

void ContentDigest::Merge(const ContentDigest& other) {
  lane_[0] += other.lane_[0];
  lane_[1] += other.lane_[1];
}

void ContentDigest::SumOverRanks(const Comm& comm) {
  // Unsigned addition wraps modulo 2⁶⁴ in MPI_SUM as in C, so the sum is the digest of all
  // the points whatever the reduction order.
  MPI_Allreduce(MPI_IN_PLACE, lane_, 2, MPI_UINT64_T, MPI_SUM, comm.get());
}

std::string ContentDigest::Hex() const { return fmt::format("{:016x}{:016x}", lane_[0], lane_[1]); }

std::string DigestLocalData(const Comm& comm, const LocalData& local) {
  ContentDigest digest;
  digest.AddTiles(local.tiles, local.values.data());
  digest.SumOverRanks(comm);
  digest.AddReplicated(local);
  return digest.Hex();
}

std::string DigestMatrices(const DatasetMetadata& meta,
                           const std::vector<std::vector<double>>& c2) {
  std::vector<const double*> matrices;
  for (const std::vector<double>& m : c2) matrices.push_back(m.data());
  return DigestMatrices(meta, matrices);
}

std::string DigestMatrices(const DatasetMetadata& meta, const std::vector<const double*>& c2) {
  ContentDigest digest;
  const std::int64_t n = meta.n_frames;
  for (std::size_t a = 0; a < c2.size(); ++a) {
    const double* m = c2[a];
    for (std::int64_t i = 1; i < n; ++i) {
      for (std::int64_t j = i + 1; j < n; ++j) digest.Add(kFitted, a, i, j, m[i * n + j]);
    }
    for (std::int64_t i = 0; i < n; ++i) digest.Add(kDiagonal, a, i, i, m[i * n + i]);
    for (std::int64_t j = 1; j < n; ++j) digest.Add(kFirstRow, a, 0, j, m[j]);
  }
  return digest.Hex();
}

}  // namespace homodyne::io
