// Serial loader: reads the frame slice of every kept matrix, reconstructs the full
// matrix from the stored half matrix and applies the basic diagonal correction.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/huge_pages.h"
#include "io/block_reader.h"
#include "io/dataset.h"
#include "io/h5_handles.h"
#include "io/matrix_reader.h"
#include "io/metadata_internal.h"
#include "io/read_crash_guard.h"
#include "io/selection.h"

namespace homodyne::io {

void ReadBlock(hid_t file, const std::string& name, const std::string& path, std::int64_t row0,
               std::int64_t rows, std::int64_t col0, std::int64_t cols, double* out) {
  if (rows <= 0 || cols <= 0) return;
  BlockReader(file, name, path, /*fd=*/-1).Read(row0, rows, col0, cols, out);
}

namespace {

// c = H + Hᵀ for an n × n row-major H, block pair by block pair of the upper triangle: the
// upper block's rows are read from H contiguously and its Hᵀ part from a block of H that stays
// in cache, and the lower block is then copied from the finished upper one. Walking whole
// rows instead reads Hᵀ down whole columns, one cache line per value (3x slower at 2500
// frames). The sums are the same additions, so the bits do not change.
void AddTranspose(const double* h, std::size_t n, double* c) {
  constexpr std::size_t kBlock = 32;
  for (std::size_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::size_t i1 = std::min(n, i0 + kBlock);
    for (std::size_t j0 = i0; j0 < n; j0 += kBlock) {
      const std::size_t j1 = std::min(n, j0 + kBlock);
      for (std::size_t i = i0; i < i1; ++i) {
        double* __restrict row = c + i * n;
        const double* __restrict h_row = h + i * n;
        for (std::size_t j = (j0 == i0 ? i : j0); j < j1; ++j) row[j] = h_row[j] + h[j * n + i];
      }
      for (std::size_t j = j0; j < j1; ++j) {
        double* __restrict row = c + j * n;
        const std::size_t end = (j0 == i0) ? j : i1;
        for (std::size_t i = i0; i < end; ++i) row[i] = c[i * n + j];
      }
    }
  }
}

// The kept matrix of `bin` into `c`: frame slice read into `half` (n × n), checked for
// NaN/Inf, reconstructed and diagonal-corrected.
void CorrectedMatrix(hid_t file, const std::string& name, const DatasetMetadata& meta,
                     const SelectedBin& bin, std::vector<double>& half, std::vector<double>& c) {
  const std::int64_t n = meta.n_frames;
  const auto un = static_cast<std::size_t>(n);
  ResizeOnHugePages(half, un * un);
  ReadBlock(file, name, bin.dataset, meta.frame_begin, n, meta.frame_begin, n, half.data());
  std::size_t bad = 0;
  for (double v : half) bad += std::isfinite(v) ? 0 : 1;
  if (bad > 0) {
    ThrowBadInput(fmt::format("NaN/Inf in bin {} ({}): {} non-finite values in frames {}..{}",
                              bin.bin, bin.dataset, bad, meta.start_frame, meta.end_frame),
                  name, bin.dataset);
  }
  ResizeOnHugePages(c, un * un);
  AddTranspose(half.data(), un, c.data());
  for (std::size_t i = 0; i < un; ++i) c[i * un + i] /= 2.0;
  ApplyBasicDiagonalCorrection(c, n);
}

}  // namespace

void LoadAngleMatrixInto(const DatasetMetadata& meta, std::size_t angle,
                         std::vector<double>& buffer, std::vector<double>& matrix) {
  HOMODYNE_CHECK(angle < meta.bins.size(), "angle index out of range");
  const ReadCrashGuard guard(meta.file, "the correlation matrices");
  h5::File file = h5::OpenForRead(meta.file);
  CorrectedMatrix(file.get(), meta.file, meta, meta.bins[angle], buffer, matrix);
}

DatasetView ViewOf(const Dataset& data) {
  DatasetView view{data.meta, {}};
  for (const std::vector<double>& m : data.c2) view.c2.push_back(m.data());
  return view;
}

Dataset LoadDataset(const LoadOptions& options, const Logger& logger) {
  options.Validate();
  const ReadCrashGuard guard(options.path, "the correlation matrices");
  h5::File file = h5::OpenForRead(options.path);
  Dataset data;
  data.meta = ReadMetadataFromFile(file.get(), options, logger);
  const DatasetMetadata& meta = data.meta;
  const std::int64_t n = meta.n_frames;
  const std::uint64_t matrix_bytes = static_cast<std::uint64_t>(n) * n * sizeof(double);
  const std::uint64_t needed = matrix_bytes * (meta.bins.size() + 1);  // + one read buffer
  if (needed > MaxLoadBytes(options)) {
    ThrowBadInput(fmt::format("loading {} matrices of {} x {} frames needs {:.3g} GiB, more than "
                              "the limit of {:.3g} GiB for one process; use the distributed "
                              "loader, fewer frames or fewer angles",
                              meta.bins.size(), n, n, static_cast<double>(needed) / (1 << 30),
                              static_cast<double>(MaxLoadBytes(options)) / (1 << 30)),
                  options.path);
  }
  std::vector<double> half;
  for (const SelectedBin& bin : meta.bins) {
    CorrectedMatrix(file.get(), options.path, meta, bin, half, data.c2.emplace_back());
  }
  return data;
}

}  // namespace homodyne::io
