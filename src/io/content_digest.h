// The identity of a dataset's content: a 128-bit digest of the values a fit reads, the same
// whichever way the points are split over ranks, windows or threads.
//
// Checkpoints are resumed only by the run they belong to, and "the same data" must mean the
// same numbers: two files of one shape copied with their times kept (cp -p, rsync -t, an
// archive) share size and modification time, but not their values. Every point contributes
// a mixed hash of its key (angle, row, column) and its value's bits, and the contributions
// are added modulo 2⁶⁴ in two independent lanes: addition commutes, so any partition of the
// points (ranks, streamed windows) sums to the same digest, and a rank's partial sum costs
// one multiply–xor chain per value read anyway.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/distributed_loader.h"
#include "parallel/comm.h"

namespace homodyne::io {

class ContentDigest {
 public:
  // One value at (angle, i, j); `kind` separates the families of values (fitted points,
  // corrected diagonal, first row) that share indices.
  void Add(std::uint32_t kind, std::size_t angle, std::int64_t i, std::int64_t j, double value);
  // The values of `tiles` (loader indices, offsets into `values`), as LocalData holds them.
  void AddTiles(const std::vector<LocalTile>& tiles, const double* values);
  // LocalData's per-angle vectors that every rank holds (diagonal, first row).
  void AddReplicated(const LocalData& local);
  void Merge(const ContentDigest& other);
  // Collective: the sum over the ranks of `comm`.
  void SumOverRanks(const Comm& comm);
  std::string Hex() const;  // 32 hex digits

 private:
  std::uint64_t lane_[2] = {0, 0};
};

// Collective. The digest of an in-core LocalData (values loaded): its fitted points summed
// over the ranks, plus the replicated diagonals and first rows.
std::string DigestLocalData(const Comm& comm, const LocalData& local);

// The digest of full matrices held by one process (the serial loader's Dataset): the same
// points, diagonal and first row as DigestLocalData of the same selection with first rows
// (loader indices 1 ≤ i < j ≤ N − 1, the corrected diagonal, C[0, j]).
std::string DigestMatrices(const DatasetMetadata& meta, const std::vector<std::vector<double>>& c2);
// The same of matrices held elsewhere (a DatasetView's): c2[k] is angle k's N×N matrix.
std::string DigestMatrices(const DatasetMetadata& meta, const std::vector<const double*>& c2);

}  // namespace homodyne::io
