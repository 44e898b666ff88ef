// Distributed loading: each MPI rank reads only the two-time points it owns.
//
// Rank 0 reads the metadata (layout, q/phi/frame selection, shapes) and builds the
// PartitionPlan of the fitted points (t = 0 excluded: loader indices 1..N-1, points
// i < j, every kept angle); both are broadcast. Every rank then opens the file with the
// MPI-IO driver and reads, per angle it touches, the row block H[i0:i1, j0:N] and the
// column block H[j0:N, i0:i1] of the stored half matrix (after the frame offset), so
// C[i,j] = H[i,j] + H[j,i] exactly as the serial loader computes it. The first
// super-/sub-diagonal of every angle is read on every rank to give the corrected
// diagonal (spec §1.6) identical to the serial loader's; so is the first frame's row
// C[0, j] when LoadOptions::first_row asks for it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/log.h"
#include "io/dataset.h"
#include "io/load_options.h"
#include "parallel/comm.h"
#include "parallel/partition.h"

namespace homodyne::io {

struct LocalTile {
  RowTile tile;            // angle, loader row i, first column j0, count
  std::size_t offset = 0;  // index of C[i, j0] in LocalData::values
};

struct LocalData {
  DatasetMetadata meta;  // identical on all ranks
  PartitionPlan plan;    // identical on all ranks
  int rank = 0;
  std::vector<LocalTile> tiles;  // this rank's points, in plan order
  std::vector<double> values;    // C[i, j] for every tile point, concatenated
  // Corrected diagonal of every kept angle (loader indices 0..N-1), on every rank.
  std::vector<std::vector<double>> diagonal;
  // If asked for (LoadOptions::first_row): C[0, j] of every kept angle, j = 0..N-1 (j = 0
  // the corrected diagonal's first value), on every rank, checked finite; else empty.
  std::vector<std::vector<double>> first_row;

  std::int64_t local_points() const { return static_cast<std::int64_t>(values.size()); }
};

// ReadDatasetMetadata on rank 0, its result on every rank (collective; a failure is the
// same agreed homodyne::Error on every rank).
DatasetMetadata BroadcastMetadata(const Comm& comm, const LoadOptions& options,
                                  const Logger& logger);

// Collective over `comm`. Errors on any rank (including rank 0's metadata read) are
// raised on every rank as the same agreed homodyne::Error.
LocalData LoadDistributed(const Comm& comm, const LoadOptions& options, const Logger& logger);

// Everything LoadDistributed does except reading the fitted values (streaming fits):
// metadata, plan, this rank's tiles with their offsets, the corrected diagonals (checked
// finite) and the first rows if asked for. `values` stays empty. Collective.
LocalData LoadDistributedLayout(const Comm& comm, const LoadOptions& options, const Logger& logger);

// The same LocalData as LoadDistributed, from a dataset every rank holds in memory (the
// public API's in-memory fits): the plan, this rank's tiles and their values copied from
// *data.c2, the diagonals and, if `first_row`, the first rows. Collective; a non-finite
// fitted value (or first-row value) is the agreed bad-input Error naming the angle.
LocalData DistributeInMemory(const Comm& comm, const DatasetView& data, bool first_row = false);

// Collective: `bad[k]` non-finite values of angle k found on this rank; if any rank found
// some, every rank throws the same agreed bad-input Error naming the bin (and saying that
// only the first off-diagonal was read when `off_diagonal_only`).
void AgreeOnNonFinite(const Comm& comm, const DatasetMetadata& meta,
                      const std::vector<std::int64_t>& bad, bool off_diagonal_only = false);

}  // namespace homodyne::io
