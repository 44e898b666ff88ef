// The streaming data source of an NLSQ fit: a rank's partition blocks cut into windows of
// whole blocks, each window re-read from the HDF5 file into one reusable buffer.
//
// A window is a run of consecutive local blocks holding at most the planned number of
// points (memory_plan.h; a single larger block is a window of its own). Load(w) reads
// window w and returns its tiles twice: in loader indices with offsets into the buffer
// (for the data passes of the initial scaling) and as model row tiles on the fit grid
// (loader index − 1) grouped by block, whose data pointers stay valid until the next
// Load. The values are the loader's (C = H + Hᵀ of the selected frames), so every
// block's partial sums are bit-identical to the in-core fit's. A window whose first read
// found Hᵀ's part zero (a half matrix stored upper) is read again from its stored rows alone:
// half the bytes, the same bits.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/distributed_loader.h"
#include "io/tile_stream_reader.h"
#include "model/row_tile.h"
#include "nlsq/pass_ledger.h"
#include "parallel/comm.h"

namespace homodyne::nlsq {

struct StreamWindow {
  int first_block = 0;                              // local block index of the window's first
  std::vector<io::LocalTile> tiles;                 // loader indices, offsets into `values`
  std::vector<std::vector<model::RowTile>> blocks;  // fit-grid tiles per block
  std::span<const double> values;
};

class BlockStream {
 public:
  // Times one pass (StreamPassTiming): made before the pass's first Load, destroyed after its
  // last window's work. A pass cut short (a stop, an error) is recorded as far as it went; one
  // that read nothing is not recorded.
  class PassTimer {
   public:
    explicit PassTimer(BlockStream& stream);
    ~PassTimer();
    PassTimer(const PassTimer&) = delete;
    PassTimer& operator=(const PassTimer&) = delete;

   private:
    BlockStream& stream_;
    std::chrono::steady_clock::time_point start_;
    double read_seconds_ = 0.0;
    std::int64_t file_values_ = 0;
  };

  // Collective over `comm` (opens the file). `layout` is the rank's LoadDistributedLayout
  // (values empty); the stream keeps a copy of its tile list.
  BlockStream(const Comm& comm, const io::LocalData& layout, std::int64_t window_points,
              std::int64_t max_read_values);
  ~BlockStream();  // collective (closes the file)
  BlockStream(const BlockStream&) = delete;
  BlockStream& operator=(const BlockStream&) = delete;

  int num_windows() const;
  int num_blocks() const;  // local blocks
  std::int64_t local_points() const { return local_points_; }
  std::int64_t max_window_points() const;
  // Reads window w (not collective).
  const StreamWindow& Load(int w);
  std::int64_t windows_loaded() const { return loads_; }
  // Every timed pass so far (PassTimer), at most kMaxPassTimings of them (the first ones).
  const std::vector<StreamPassTiming>& pass_timings() const { return passes_; }
  static constexpr std::size_t kMaxPassTimings = 100000;

 private:
  std::vector<io::LocalTile> tiles_;
  std::vector<std::size_t> block_tile_begin_;  // local blocks → index into layout_.tiles
  std::vector<int> window_starts_;
  // Per window: its first read found the stored lower triangle of all its points +0.0 (a half
  // matrix stored upper, as APS files are), so later reads take its stored rows alone.
  std::vector<char> upper_only_;
  std::vector<double> buffer_;
  StreamWindow window_;
  std::unique_ptr<io::TileStreamReader> reader_;
  std::int64_t loads_ = 0;
  std::int64_t local_points_ = 0;
  double read_seconds_ = 0.0;  // inside Load, since the stream was made
  std::vector<StreamPassTiming> passes_;
};

// Collective. io::DigestLocalData of the same data, read window by window from `stream`
// (one read of the rank's points; a read error is agreed).
std::string DigestStreamedData(const Comm& comm, const io::LocalData& layout, BlockStream& stream);

}  // namespace homodyne::nlsq
