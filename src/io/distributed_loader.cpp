// Distributed loader (see io/distributed_loader.h).
#include "io/distributed_loader.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "core/fault_injection.h"
#include "core/huge_pages.h"
#include "core/progress.h"
#include "io/block_reader.h"
#include "io/h5_handles.h"
#include "io/matrix_reader.h"
#include "io/metadata_internal.h"
#include "io/read_crash_guard.h"
#include "io/selection.h"
#include "parallel/collective.h"

namespace homodyne::io {
namespace {

// Largest row or column block read at once (doubles): 16 Mi values = 128 MiB.
constexpr std::int64_t kMaxBlockValues = std::int64_t{1} << 24;

// C[a, b] = H[a, b] + H[b, a] for every (a, b) of `pairs` (frame-slice indices, a != b), in
// one point selection.
std::vector<double> ReadSymmetricPairs(
    hid_t file, const DatasetMetadata& meta, const SelectedBin& bin,
    const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
  if (pairs.empty()) return {};
  const auto s0 = static_cast<hsize_t>(meta.frame_begin);
  const std::size_t np = 2 * pairs.size();
  std::vector<hsize_t> coords(2 * np);
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto a = s0 + static_cast<hsize_t>(pairs[k].first);
    const auto b = s0 + static_cast<hsize_t>(pairs[k].second);
    coords[4 * k + 0] = a;  // H[a, b]
    coords[4 * k + 1] = b;
    coords[4 * k + 2] = b;  // H[b, a]
    coords[4 * k + 3] = a;
  }
  auto ds = h5::OpenDataset(file, meta.file, bin.dataset);
  const h5::Where where{meta.file, bin.dataset};
  auto fspace = h5::Own<h5::Dataspace>(H5Dget_space(ds.get()), "getting the dataspace", where);
  h5::Check(H5Sselect_elements(fspace.get(), H5S_SELECT_SET, np, coords.data()),
            "selecting the first off-diagonal (and first row)", where);
  const hsize_t mdim = np;
  auto mspace =
      h5::Own<h5::Dataspace>(H5Screate_simple(1, &mdim, nullptr), "creating a memory space", where);
  std::vector<double> values(np);
  h5::Check(
      H5Dread(ds.get(), H5T_NATIVE_DOUBLE, mspace.get(), fspace.get(), H5P_DEFAULT, values.data()),
      "reading the first off-diagonal (and first row)", where);
  std::vector<double> sums(pairs.size());
  for (std::size_t k = 0; k < sums.size(); ++k) sums[k] = values[2 * k] + values[2 * k + 1];
  return sums;
}

// Collective: the per-angle counts summed over the ranks, on every rank.
std::vector<std::int64_t> SumOverRanks(const Comm& comm, const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> total(counts.size(), 0);
  MPI_Allreduce(counts.data(), total.data(), static_cast<int>(counts.size()), MPI_INT64_T, MPI_SUM,
                comm.get());
  return total;
}

// Collective: `bad[k]` non-finite values on angle k's first row (counted on one rank); if
// any, every rank throws the same agreed bad-input Error naming the bin.
void AgreeOnFiniteFirstRow(const Comm& comm, const DatasetMetadata& meta,
                           const std::vector<std::int64_t>& bad) {
  const std::vector<std::int64_t> total = SumOverRanks(comm, bad);
  for (std::size_t k = 0; k < total.size(); ++k) {
    if (total[k] > 0) {
      throw MarkAgreed(
          Error(ErrorKind::kBadInput,
                fmt::format("NaN/Inf in bin {} ({}): {} non-finite values on the row of frame "
                            "{} (frames {}..{}), which two_component's quantile estimates of "
                            "the per-angle scaling pool",
                            meta.bins[k].bin, meta.bins[k].dataset, total[k], meta.start_frame,
                            meta.start_frame, meta.end_frame),
                {meta.file, meta.bins[k].dataset, -1}));
    }
  }
}

}  // namespace

DatasetMetadata BroadcastMetadata(const Comm& comm, const LoadOptions& options,
                                  const Logger& logger) {
  std::vector<char> bytes = RunCollectively(comm, [&] {
    return comm.is_root() ? EncodeMetadata(ReadDatasetMetadata(options, logger))
                          : std::vector<char>{};
  });
  std::uint64_t size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm.get());
  bytes.resize(size);
  MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_CHAR, 0, comm.get());
  return DecodeMetadata(bytes);
}

namespace {

// values[tile.offset + c] = H[i, j] + H[j, i] for tiles [a, b) of one batch, from its row block
// (rows × cols from (i0, jmin)) and column block (cols × rows from (jmin, i0)). Tiles are taken
// kGroup at a time and their columns kSpan at a time, so that the column block's lines (each
// kGroup consecutive rows' values of one column) are read once from memory and the rows' and
// outputs' runs stay short. Tile by tile, each value of a column block of thousands of rows was
// on a page of its own (a TLB miss per value). The same additions, so the same bits. Returns
// the bitwise OR of the H[j, i] with j > i that it added (0: all of them were +0.0).
std::uint64_t CombineBlocks(const std::vector<LocalTile>& tiles, std::size_t a, std::size_t b,
                            std::int64_t i0, std::int64_t jmin, std::int64_t rows,
                            std::int64_t cols, const std::vector<double>& row_block,
                            const std::vector<double>& col_block, std::span<double> values) {
  constexpr std::size_t kGroup = 16;
  constexpr std::int64_t kSpan = 64;  // columns per step: the step's reads stay in cache
  std::uint64_t lower_bits = 0;
  for (std::size_t g = a; g < b; g += kGroup) {
    const std::size_t end = std::min(b, g + kGroup);
    std::int64_t lo = cols, hi = 0;
    for (std::size_t t = g; t < end; ++t) {
      lo = std::min(lo, tiles[t].tile.col_begin - jmin);
      hi = std::max(hi, tiles[t].tile.col_begin - jmin + tiles[t].tile.count);
    }
    for (std::int64_t j0 = lo; j0 < hi; j0 += kSpan) {
      const std::int64_t j1 = std::min(hi, j0 + kSpan);
      for (std::size_t t = g; t < end; ++t) {
        const RowTile& tile = tiles[t].tile;
        const std::int64_t first = tile.col_begin - jmin;  // the tile's first column in the blocks
        const std::int64_t r = tile.row - i0;
        const double* row = row_block.data() + r * cols;
        double* out = values.data() + tiles[t].offset;
        std::int64_t from = std::max(j0, first);
        const std::int64_t to = std::min(j1, first + tile.count);
        if (from < to && from + jmin == tile.row) {  // the diagonal: H[i, i] twice
          out[from - first] = row[from] + col_block[static_cast<std::size_t>(from * rows + r)];
          ++from;
        }
        for (std::int64_t jj = from; jj < to; ++jj) {
          const double lower = col_block[static_cast<std::size_t>(jj * rows + r)];
          lower_bits |= std::bit_cast<std::uint64_t>(lower);
          out[jj - first] = row[jj] + lower;
        }
      }
    }
  }
  return lower_bits;
}

// C of one tile of a matrix whose lower triangle is known to be +0.0, from the tile's run of
// its stored row (`stored` may be `out`): H[i, j] + 0.0 (the same bits as adding the stored
// +0.0) and H[i, i] + H[i, i] on the diagonal.
void SumUpperOnly(const RowTile& tile, const double* stored, double* out) {
  std::int64_t c = 0;
  if (tile.count > 0 && tile.col_begin == tile.row) {
    out[0] = stored[0] + stored[0];
    c = 1;
  }
  for (; c < tile.count; ++c) out[c] = stored[c] + 0.0;
}

// The same sums for tiles [a, b) of one batch from its row block alone.
void CombineUpperOnly(const std::vector<LocalTile>& tiles, std::size_t a, std::size_t b,
                      std::int64_t i0, std::int64_t jmin, std::int64_t cols,
                      const std::vector<double>& row_block, std::span<double> values) {
  for (std::size_t t = a; t < b; ++t) {
    const RowTile& tile = tiles[t].tile;
    SumUpperOnly(tile, row_block.data() + (tile.row - i0) * cols + (tile.col_begin - jmin),
                 values.data() + tiles[t].offset);
  }
}

}  // namespace

std::int64_t ReadUpperOnlyDirect(const DirectMatrix& matrix, std::int64_t s0,
                                 const std::vector<LocalTile>& tiles, std::size_t first,
                                 std::size_t last, std::span<double> values) {
  std::int64_t read = 0;
  for (std::size_t t = first; t < last; ++t) {
    const RowTile& tile = tiles[t].tile;
    if (tile.count <= 0) continue;
    double* out = values.data() + tiles[t].offset;
    matrix.Read(s0 + tile.row, 1, s0 + tile.col_begin, tile.count, out);
    read += tile.count;
    SumUpperOnly(tile, out, out);
  }
  return read;
}

TileReadResult ReadAngleTiles(hid_t file, const DatasetMetadata& meta, const SelectedBin& bin,
                              const std::vector<LocalTile>& tiles, std::size_t first,
                              std::size_t last, std::span<double> values,
                              std::int64_t max_block_values, TileBlockBuffers& buffers,
                              bool upper_only) {
  const std::int64_t n = meta.n_frames;
  const std::int64_t s0 = meta.frame_begin;
  TileReadResult result;
  std::uint64_t lower_bits = 0;
  BlockReader reader(file, meta.file, bin.dataset, buffers.fd);
  if (upper_only && reader.direct()) {
    result.values_read =
        ReadUpperOnlyDirect(reader.direct_matrix(), s0, tiles, first, last, values);
    return result;
  }
  std::size_t a = first;
  while (a < last) {
    // A batch of consecutive tiles whose blocks stay under the size limit.
    std::int64_t jmin = tiles[a].tile.col_begin;
    std::size_t b = a + 1;
    while (b < last) {
      const std::int64_t j = std::min(jmin, tiles[b].tile.col_begin);
      const std::int64_t rows = tiles[b].tile.row - tiles[a].tile.row + 1;
      if (rows * (n - j) > max_block_values) break;
      jmin = j;
      ++b;
    }
    const std::int64_t i0 = tiles[a].tile.row;
    const std::int64_t rows = tiles[b - 1].tile.row - i0 + 1;
    const std::int64_t cols = n - jmin;
    std::vector<double>& row_block = buffers.rows;
    ResizeOnHugePages(row_block, static_cast<std::size_t>(rows * cols));
    reader.Read(s0 + i0, rows, s0 + jmin, cols, row_block.data());
    if (upper_only) {
      result.values_read += rows * cols;
      CombineUpperOnly(tiles, a, b, i0, jmin, cols, row_block, values);
    } else {
      std::vector<double>& col_block = buffers.cols;
      ResizeOnHugePages(col_block, static_cast<std::size_t>(rows * cols));
      reader.Read(s0 + jmin, cols, s0 + i0, rows, col_block.data());
      result.values_read += 2 * rows * cols;
      lower_bits |= CombineBlocks(tiles, a, b, i0, jmin, rows, cols, row_block, col_block, values);
    }
    a = b;
  }
  result.lower_zero = !upper_only && lower_bits == 0;
  return result;
}

void AgreeOnNonFinite(const Comm& comm, const DatasetMetadata& meta,
                      const std::vector<std::int64_t>& bad, bool off_diagonal_only) {
  const std::vector<std::int64_t> total = SumOverRanks(comm, bad);
  for (std::size_t k = 0; k < total.size(); ++k) {
    if (total[k] > 0) {
      throw MarkAgreed(
          Error(ErrorKind::kBadInput,
                off_diagonal_only
                    ? fmt::format("NaN/Inf in bin {} ({}): {} of the {} values on the first "
                                  "off-diagonal of frames {}..{} are not finite (the rest of the "
                                  "matrix is not read yet)",
                                  meta.bins[k].bin, meta.bins[k].dataset, total[k],
                                  meta.n_frames - 1, meta.start_frame, meta.end_frame)
                    : fmt::format("NaN/Inf in bin {} ({}): {} non-finite values among the "
                                  "fitted points and first off-diagonals of frames {}..{}",
                                  meta.bins[k].bin, meta.bins[k].dataset, total[k],
                                  meta.start_frame, meta.end_frame),
                {meta.file, meta.bins[k].dataset, -1}));
    }
  }
}

namespace {

// The partition plan (rank 0's, broadcast) and this rank's tiles with their offsets into
// its values; returns the number of values.
std::size_t PlanLocalTiles(const Comm& comm, const Logger& logger, LocalData& local) {
  const DatasetMetadata& meta = local.meta;
  PartitionPlan plan;
  if (comm.is_root()) {
    plan = PartitionPlan(static_cast<std::int32_t>(meta.n_angles()), 1, meta.n_frames - 1,
                         comm.size());
    logger.Debug("{}", plan.Table());
  }
  local.plan = BroadcastPartitionPlan(comm, plan);
  for (const RowTile& t : local.plan.TilesFor(comm.rank())) {
    local.tiles.push_back({t, 0});
  }
  std::size_t offset = 0;
  for (LocalTile& t : local.tiles) {
    t.offset = offset;
    offset += static_cast<std::size_t>(t.tile.count);
  }
  return offset;
}

// Local buffers, checked against the per-process limit before allocating.
void AllocateValues(const Comm& comm, const LoadOptions& options, std::size_t count,
                    bool read_values, LocalData& local) {
  const DatasetMetadata& meta = local.meta;
  RunCollectively(comm, [&] {
    if (!read_values) return;
    // values + per-angle diagonals + the two read blocks (bounded by kMaxBlockValues).
    const auto n = static_cast<std::uint64_t>(meta.n_frames);
    const std::uint64_t block = std::min<std::uint64_t>(static_cast<std::uint64_t>(kMaxBlockValues),
                                                        (local.tiles.size() + 1) * n);
    const std::uint64_t bytes = (count + meta.n_angles() * n * 2 + 2 * block) * sizeof(double);
    if (bytes > MaxLoadBytes(options)) {
      ThrowBadInput(fmt::format("this rank's share needs {:.3g} GiB, more than the limit of "
                                "{:.3g} GiB per process; use more ranks",
                                static_cast<double>(bytes) / (1 << 30),
                                static_cast<double>(MaxLoadBytes(options)) / (1 << 30)),
                    meta.file);
    }
    ReserveOnHugePages(local.values, count);
    local.values.assign(count, 0.0);
  });
}

// This rank's tiles read angle by angle, each angle's non-finite values counted in `bad`.
void ReadLocalTiles(hid_t file, const Logger& logger, bool read_values, LocalData& local,
                    std::vector<std::int64_t>& bad) {
  const DatasetMetadata& meta = local.meta;
  // One batch of large row/column blocks per angle: the rank's rows of an angle are a
  // contiguous run (its blocks are consecutive rows), even though the tiles of
  // different angles interleave block by block.
  std::vector<std::vector<LocalTile>> by_angle(meta.n_angles());
  Progress progress(logger, "loading");
  const ReadOnlyFd fd(meta.file);
  TileBlockBuffers buffers;
  buffers.fd = fd.get();
  double bytes_read = 0.0;
  for (const LocalTile& t : local.tiles) {
    by_angle[static_cast<std::size_t>(t.tile.angle)].push_back(t);
  }
  for (std::size_t k = 0; read_values && k < by_angle.size(); ++k) {
    auto& tiles = by_angle[k];
    std::stable_sort(tiles.begin(), tiles.end(), [](const LocalTile& x, const LocalTile& y) {
      return x.tile.row < y.tile.row;
    });
    ReadAngleTiles(file, meta, meta.bins[k], tiles, 0, tiles.size(), local.values, kMaxBlockValues,
                   buffers);
    for (const LocalTile& t : tiles) bytes_read += 8.0 * static_cast<double>(t.tile.count);
    progress.Update(fmt::format("angle {}/{}, {:.1f} MB read on rank 0, {:.0f} MB/s", k + 1,
                                by_angle.size(), bytes_read / 1e6,
                                bytes_read / 1e6 / std::max(progress.elapsed(), 1e-9)));
  }
  if (read_values) {
    progress.Done(fmt::format("{} angle(s), {:.1f} MB read on rank 0 in {:.2f} s", by_angle.size(),
                              bytes_read / 1e6, progress.elapsed()));
  }
  for (const LocalTile& t : local.tiles) {
    for (std::int64_t c = 0; read_values && c < t.tile.count; ++c) {
      if (!std::isfinite(local.values[t.offset + static_cast<std::size_t>(c)])) {
        ++bad[static_cast<std::size_t>(t.tile.angle)];
      }
    }
  }
}

// Every angle's corrected diagonal (and with options.first_row its first row), on every
// rank; rank 0 counts their non-finite values in `bad` and `bad_row`.
void ReadDiagonals(hid_t file, const Comm& comm, const LoadOptions& options, bool read_values,
                   LocalData& local, std::vector<std::int64_t>& bad,
                   std::vector<std::int64_t>& bad_row) {
  const DatasetMetadata& meta = local.meta;
  for (std::size_t k = 0; k < meta.n_angles(); ++k) {
    if (meta.n_frames < 2) {
      std::vector<double> d(1);
      ReadBlock(file, meta.file, meta.bins[k].dataset, meta.frame_begin, 1, meta.frame_begin, 1,
                d.data());
      local.diagonal.push_back(d);
      if (options.first_row) local.first_row.push_back(d);
      continue;
    }
    // C[m, m+1] for m = 0..N-2, then (first rows) C[0, j] for j = 2..N-1, in one read.
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::int64_t m = 0; m + 1 < meta.n_frames; ++m) pairs.emplace_back(m, m + 1);
    for (std::int64_t j = 2; options.first_row && j < meta.n_frames; ++j) {
      pairs.emplace_back(0, j);
    }
    std::vector<double> read = ReadSymmetricPairs(file, meta, meta.bins[k], pairs);
    const auto n_super = static_cast<std::size_t>(meta.n_frames - 1);
    const std::span<const double> super(read.data(), n_super);
    // C[m, m+1] for m >= 1 are fitted points (counted by their owner); C[0, 1] only
    // enters the diagonal correction: rank 0 counts it.
    // Before the values are read (layout only), rank 0 counts the whole off-diagonal.
    if (comm.is_root()) {
      for (std::size_t m = 0; m < (read_values ? 1 : super.size()); ++m) {
        if (!std::isfinite(super[m])) ++bad[k];
      }
    }
    local.diagonal.push_back(CorrectedDiagonal(super, super));
    if (options.first_row) {
      std::vector<double> row(static_cast<std::size_t>(meta.n_frames));
      row[0] = local.diagonal.back()[0];
      row[1] = super[0];
      std::copy(read.begin() + static_cast<std::ptrdiff_t>(n_super), read.end(), row.begin() + 2);
      // Rank 0 counts the row (every rank holds it); C[0, 0] = C[0, 1] is counted above.
      if (comm.is_root()) {
        for (std::size_t j = 1; j < row.size(); ++j) {
          if (!std::isfinite(row[j])) ++bad_row[k];
        }
      }
      local.first_row.push_back(std::move(row));
    }
  }
}

LocalData Load(const Comm& comm, const LoadOptions& options, const Logger& logger,
               bool read_values) {
  LocalData local;
  local.rank = comm.rank();
  local.meta = BroadcastMetadata(comm, options, logger);
  const DatasetMetadata& meta = local.meta;
  const std::size_t count = PlanLocalTiles(comm, logger, local);
  AllocateValues(comm, options, count, read_values, local);

  const ReadCrashGuard guard(meta.file, "this rank's share of the correlation matrices");
  h5::File file = RunCollectively(comm, [&] { return h5::OpenForRead(meta.file, comm.get()); });
  std::vector<std::int64_t> bad(meta.n_angles(), 0);
  std::vector<std::int64_t> bad_row(meta.n_angles(), 0);
  RunCollectively(comm, [&] {
    const FaultScope load("load");  // job rank: comm may be a multistart group
    ReadLocalTiles(file.get(), logger, read_values, local, bad);
    ReadDiagonals(file.get(), comm, options, read_values, local, bad, bad_row);
  });
  file.Close({meta.file, ""});

  AgreeOnNonFinite(comm, meta, bad, /*off_diagonal_only=*/!read_values);
  AgreeOnFiniteFirstRow(comm, meta, bad_row);
  return local;
}

}  // namespace

LocalData LoadDistributed(const Comm& comm, const LoadOptions& options, const Logger& logger) {
  return Load(comm, options, logger, true);
}

LocalData LoadDistributedLayout(const Comm& comm, const LoadOptions& options,
                                const Logger& logger) {
  return Load(comm, options, logger, false);
}

LocalData DistributeInMemory(const Comm& comm, const DatasetView& data, bool first_row) {
  LocalData local;
  local.rank = comm.rank();
  local.meta = data.meta;
  const DatasetMetadata& meta = local.meta;
  const auto n = static_cast<std::size_t>(meta.n_frames);
  // The plan is a function of the shape and rank count alone: every rank builds the same.
  local.plan =
      PartitionPlan(static_cast<std::int32_t>(meta.n_angles()), 1, meta.n_frames - 1, comm.size());
  std::size_t offset = 0;
  for (const RowTile& t : local.plan.TilesFor(comm.rank())) {
    local.tiles.push_back({t, offset});
    offset += static_cast<std::size_t>(t.count);
  }
  ResizeOnHugePages(local.values, offset);
  std::vector<std::int64_t> bad(meta.n_angles(), 0);
  for (const LocalTile& t : local.tiles) {
    const double* c2 = data.c2[static_cast<std::size_t>(t.tile.angle)];
    const std::size_t row = static_cast<std::size_t>(t.tile.row) * n;
    for (std::int64_t c = 0; c < t.tile.count; ++c) {
      const double v = c2[row + static_cast<std::size_t>(t.tile.col_begin + c)];
      if (!std::isfinite(v)) ++bad[static_cast<std::size_t>(t.tile.angle)];
      local.values[t.offset + static_cast<std::size_t>(c)] = v;
    }
  }
  for (const double* c2 : data.c2) {
    std::vector<double> diagonal(n);
    for (std::size_t m = 0; m < n; ++m) diagonal[m] = c2[m * n + m];
    local.diagonal.push_back(std::move(diagonal));
  }
  std::vector<std::int64_t> bad_row(meta.n_angles(), 0);
  for (std::size_t k = 0; first_row && k < data.c2.size(); ++k) {
    const double* c2 = data.c2[k];
    local.first_row.emplace_back(c2, c2 + n);
    // Every rank holds the data: rank 0 counts.
    for (std::size_t j = 0; comm.is_root() && j < n; ++j) {
      if (!std::isfinite(c2[j])) ++bad_row[k];
    }
  }
  AgreeOnNonFinite(comm, meta, bad);
  AgreeOnFiniteFirstRow(comm, meta, bad_row);
  return local;
}

}  // namespace homodyne::io
