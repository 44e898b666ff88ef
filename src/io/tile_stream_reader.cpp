#include "io/tile_stream_reader.h"

#include <algorithm>

#include "io/block_reader.h"
#include "io/h5_handles.h"
#include "io/matrix_reader.h"
#include "io/read_crash_guard.h"

namespace homodyne::io {

struct TileStreamReader::Impl {
  DatasetMetadata meta;
  h5::File file;
  std::int64_t max_block_values = 0;
  std::vector<std::vector<LocalTile>> by_angle;  // reused between reads
  TileBlockBuffers buffers;                      // reused between reads
  std::unique_ptr<ReadOnlyFd> fd;                // pread of contiguous datasets
  std::vector<DirectMatrix> direct;              // per angle (invalid: read through HDF5)
  bool all_direct = false;
};

TileStreamReader::TileStreamReader(const Comm& comm, const DatasetMetadata& meta,
                                   std::int64_t max_block_values)
    : impl_(std::make_unique<Impl>()) {
  impl_->meta = meta;
  impl_->max_block_values = std::max<std::int64_t>(max_block_values, 1);
  const ReadCrashGuard guard(meta.file, "the file to stream it");
  impl_->file = h5::OpenForRead(meta.file, comm.get());
  impl_->fd = std::make_unique<ReadOnlyFd>(meta.file);
  impl_->buffers.fd = impl_->fd->get();
  impl_->by_angle.resize(meta.n_angles());
  impl_->all_direct = impl_->fd->get() >= 0;
  for (const SelectedBin& bin : meta.bins) {
    const BlockReader reader(impl_->file.get(), meta.file, bin.dataset, impl_->fd->get());
    impl_->direct.push_back(reader.direct_matrix());
    impl_->all_direct = impl_->all_direct && reader.direct();
  }
}

bool TileStreamReader::all_direct() const { return impl_->all_direct; }

std::int64_t TileStreamReader::ReadUpperOnly(const std::vector<LocalTile>& tiles,
                                             std::span<double> values) const {
  const Impl& im = *impl_;
  HOMODYNE_CHECK(im.all_direct, "an upper-only read without HDF5 of a file that needs HDF5");
  std::int64_t read = 0;
  for (std::size_t t = 0; t < tiles.size(); ++t) {
    const LocalTile& lt = tiles[t];
    HOMODYNE_CHECK(lt.offset + static_cast<std::size_t>(lt.tile.count) <= values.size(),
                   "streamed tile outside the window buffer");
    read += ReadUpperOnlyDirect(im.direct.at(static_cast<std::size_t>(lt.tile.angle)),
                                im.meta.frame_begin, tiles, t, t + 1, values);
  }
  return read;
}

void TileStreamReader::ReleaseBlockBuffers() {
  std::vector<double>().swap(impl_->buffers.rows);
  std::vector<double>().swap(impl_->buffers.cols);
}

TileStreamReader::~TileStreamReader() = default;

bool TileStreamReader::Read(const std::vector<LocalTile>& tiles, std::span<double> values,
                            bool upper_only) {
  Impl& im = *impl_;
  const ReadCrashGuard guard(im.meta.file, "streamed tiles");
  for (auto& v : im.by_angle) v.clear();
  for (const LocalTile& t : tiles) {
    HOMODYNE_CHECK(t.offset + static_cast<std::size_t>(t.tile.count) <= values.size(),
                   "streamed tile outside the window buffer");
    im.by_angle.at(static_cast<std::size_t>(t.tile.angle)).push_back(t);
    values_read_ += t.tile.count;
  }
  bool lower_zero = true;
  for (std::size_t k = 0; k < im.by_angle.size(); ++k) {
    auto& list = im.by_angle[k];
    if (list.empty()) continue;
    std::stable_sort(list.begin(), list.end(), [](const LocalTile& x, const LocalTile& y) {
      return x.tile.row < y.tile.row;
    });
    const TileReadResult read =
        ReadAngleTiles(im.file.get(), im.meta, im.meta.bins[k], list, 0, list.size(), values,
                       im.max_block_values, im.buffers, upper_only);
    file_values_read_ += read.values_read;
    lower_zero = lower_zero && read.lower_zero;
  }
  return lower_zero;
}

}  // namespace homodyne::io
