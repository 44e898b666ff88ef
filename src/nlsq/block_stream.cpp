#include "nlsq/block_stream.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "core/errors.h"
#include "core/huge_pages.h"
#include "io/content_digest.h"
#include "nlsq/memory_plan.h"
#include "parallel/collective.h"

namespace homodyne::nlsq {

BlockStream::BlockStream(const Comm& comm, const io::LocalData& layout, std::int64_t window_points,
                         std::int64_t max_read_values, std::function<void()> read_ahead_start)
    : tiles_(layout.tiles), read_ahead_start_(std::move(read_ahead_start)) {
  const PartitionPlan& plan = layout.plan;
  const int rank = comm.rank();
  std::vector<std::int64_t> block_points;
  std::size_t next = 0;
  for (int b = plan.first_block(rank); b < plan.end_block(rank); ++b) {
    block_tile_begin_.push_back(next);
    next += plan.BlockTiles(b).size();
    block_points.push_back(plan.block_points(b));
    local_points_ += block_points.back();
  }
  block_tile_begin_.push_back(next);
  HOMODYNE_CHECK(next == layout.tiles.size(), "tiles do not match the plan's blocks");
  window_starts_ = WindowStarts(block_points, window_points);
  upper_only_.assign(window_starts_.size(), 0);
  std::int64_t largest = 0;
  for (int w = 0; w < num_windows(); ++w) {
    const int b0 = window_starts_[static_cast<std::size_t>(w)];
    const int b1 = WindowEnd(w);
    std::int64_t points = 0;
    for (int b = b0; b < b1; ++b) points += block_points[static_cast<std::size_t>(b)];
    largest = std::max(largest, points);
  }
  ReserveOnHugePages(buffer_, static_cast<std::size_t>(largest));
  buffer_.assign(static_cast<std::size_t>(largest), 0.0);
  reader_ = std::make_unique<io::TileStreamReader>(comm, layout.meta, max_read_values);
  // The second window takes the block buffers' place: only where they are at least as large.
  // HOMODYNE_NO_READ_AHEAD=1 turns it off (comparisons, a file system that dislikes it).
  const char* off = std::getenv("HOMODYNE_NO_READ_AHEAD");
  read_ahead_allowed_ = (off == nullptr || *off == '\0') && num_windows() > 1 &&
                        reader_->all_direct() && 2 * max_read_values >= largest;
}

BlockStream::~BlockStream() { FinishReadAhead(-1); }

int BlockStream::num_windows() const { return static_cast<int>(window_starts_.size()); }
int BlockStream::num_blocks() const { return static_cast<int>(block_tile_begin_.size()) - 1; }
std::int64_t BlockStream::max_window_points() const {
  return static_cast<std::int64_t>(buffer_.size());
}

int BlockStream::WindowEnd(int w) const {
  return w + 1 < num_windows() ? window_starts_[static_cast<std::size_t>(w) + 1] : num_blocks();
}

void BlockStream::WindowTiles(int w, std::vector<io::LocalTile>& tiles) const {
  const int b0 = window_starts_[static_cast<std::size_t>(w)];
  const int b1 = WindowEnd(w);
  tiles.clear();
  std::size_t offset = 0;
  for (std::size_t t = block_tile_begin_[static_cast<std::size_t>(b0)];
       t < block_tile_begin_[static_cast<std::size_t>(b1)]; ++t) {
    io::LocalTile lt = tiles_[t];
    lt.offset = offset;
    offset += static_cast<std::size_t>(lt.tile.count);
    tiles.push_back(lt);
  }
  HOMODYNE_CHECK(offset <= buffer_.size(), "window larger than its buffer");
}

void BlockStream::ReadAhead(int w) {
  WindowTiles(w, ahead_tiles_);
  ahead_window_ = w;
  ahead_ = std::async(std::launch::async, [this] {
    if (read_ahead_start_) read_ahead_start_();
    return reader_->ReadUpperOnly(ahead_tiles_, std::span<double>(spare_));
  });
}

int BlockStream::FinishReadAhead(int wanted) {
  if (!ahead_.valid()) return -1;
  const int w = ahead_window_;
  ahead_window_ = -1;
  if (w == wanted) {
    reader_->CountUpperOnlyRead(ahead_.get());  // rethrows the thread's error
    return w;
  }
  try {
    ahead_.get();
  } catch (...) {
    // Not the window wanted: its error, if the file has one, comes again from a read of it.
  }
  return -1;
}

const StreamWindow& BlockStream::Load(int w) {
  HOMODYNE_CHECK(w >= 0 && w < num_windows(), "window index out of range");
  StreamWindow& win = window_;
  WindowTiles(w, win.tiles);
  const std::size_t size =
      win.tiles.empty()
          ? 0
          : win.tiles.back().offset + static_cast<std::size_t>(win.tiles.back().tile.count);
  const auto start = std::chrono::steady_clock::now();
  if (FinishReadAhead(w) == w) {
    buffer_.swap(spare_);
    ++read_ahead_loads_;
  } else {
    char& upper_only = upper_only_[static_cast<std::size_t>(w)];
    // A read that took the rows alone reports no lower triangle: the flag, once set, stays.
    if (reader_->Read(win.tiles, std::span<double>(buffer_.data(), size), upper_only != 0)) {
      upper_only = 1;
    }
  }
  read_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every window read from its stored rows alone: from now on the next one is read ahead.
  if (!read_ahead_on_ && read_ahead_allowed_ &&
      std::all_of(upper_only_.begin(), upper_only_.end(), [](char u) { return u != 0; })) {
    reader_->ReleaseBlockBuffers();
    ReserveOnHugePages(spare_, buffer_.size());
    spare_.assign(buffer_.size(), 0.0);
    read_ahead_on_ = true;
  }
  if (read_ahead_on_) ReadAhead(w + 1 < num_windows() ? w + 1 : 0);

  const int b0 = window_starts_[static_cast<std::size_t>(w)];
  const int b1 = WindowEnd(w);
  win.first_block = b0;
  win.blocks.assign(static_cast<std::size_t>(b1 - b0), {});
  std::size_t t = 0;
  for (int b = b0; b < b1; ++b) {
    auto& block = win.blocks[static_cast<std::size_t>(b - b0)];
    const std::size_t n = block_tile_begin_[static_cast<std::size_t>(b) + 1] -
                          block_tile_begin_[static_cast<std::size_t>(b)];
    for (std::size_t k = 0; k < n; ++k, ++t) {
      const io::LocalTile& lt = win.tiles[t];
      block.push_back({lt.tile.angle, static_cast<int>(lt.tile.row - 1),
                       static_cast<int>(lt.tile.col_begin - 1), static_cast<int>(lt.tile.count),
                       buffer_.data() + lt.offset, nullptr, 2.0});
    }
  }
  win.values = std::span<const double>(buffer_.data(), size);
  ++loads_;
  return win;
}

BlockStream::PassTimer::PassTimer(BlockStream& stream)
    : stream_(stream),
      start_(std::chrono::steady_clock::now()),
      read_seconds_(stream.read_seconds_),
      file_values_(stream.reader_->file_values_read()),
      loads_(stream.loads_),
      read_ahead_loads_(stream.read_ahead_loads_) {}

BlockStream::PassTimer::~PassTimer() {
  const std::int64_t values = stream_.reader_->file_values_read() - file_values_;
  if (values == 0 || stream_.passes_.size() >= kMaxPassTimings) return;
  stream_.passes_.push_back(
      {std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(),
       stream_.read_seconds_ - read_seconds_, 8.0 * static_cast<double>(values),
       stream_.loads_ - loads_, stream_.read_ahead_loads_ - read_ahead_loads_});
}

std::string DigestStreamedData(const Comm& comm, const io::LocalData& layout, BlockStream& stream) {
  io::ContentDigest digest;
  RunCollectively(comm, [&] {
    const BlockStream::PassTimer pass(stream);
    for (int w = 0; w < stream.num_windows(); ++w) {
      const StreamWindow& win = stream.Load(w);
      digest.AddTiles(win.tiles, win.values.data());
    }
  });
  digest.SumOverRanks(comm);
  digest.AddReplicated(layout);
  return digest.Hex();
}

}  // namespace homodyne::nlsq
