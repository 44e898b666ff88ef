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
//
// Read-ahead: once every window is read that way and every angle's matrix is read with pread
// (io/block_reader.h), each Load starts reading the next window (the first after the last)
// on a thread of its own into a second buffer, while the caller works on the window it got.
// The second buffer takes the place of the combined reads' block buffers, which are freed
// (memory_plan.h counts them: the window's size again), so the memory plan holds. The thread
// calls no HDF5 function; its error is thrown by the Load that wanted its window. A Load of
// another window waits for it and discards it. HOMODYNE_NO_READ_AHEAD=1 reads every window
// when it is loaded, as before.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
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
    std::int64_t loads_ = 0, read_ahead_loads_ = 0;
  };

  // Collective over `comm` (opens the file). `layout` is the rank's LoadDistributedLayout
  // (values empty); the stream keeps a copy of its tile list. `read_ahead_start` runs first
  // on each read-ahead thread (homodyne lets it run on any core of the rank).
  BlockStream(const Comm& comm, const io::LocalData& layout, std::int64_t window_points,
              std::int64_t max_read_values, std::function<void()> read_ahead_start = {});
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
  // Loads whose window the read-ahead had read.
  std::int64_t windows_read_ahead() const { return read_ahead_loads_; }
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
  // One past window w's last local block.
  int WindowEnd(int w) const;
  // Window w's tiles with their offsets into a window buffer.
  void WindowTiles(int w, std::vector<io::LocalTile>& tiles) const;
  // Starts reading window w into spare_ on a thread of its own.
  void ReadAhead(int w);
  // Waits for the read-ahead, if one runs; returns its window (−1: none) and rethrows its error
  // when that window is `wanted`.
  int FinishReadAhead(int wanted);

  std::vector<double> buffer_;  // the window returned by the last Load
  std::vector<double> spare_;   // the read-ahead's window
  std::vector<io::LocalTile> ahead_tiles_;
  StreamWindow window_;
  std::unique_ptr<io::TileStreamReader> reader_;
  std::function<void()> read_ahead_start_;
  bool read_ahead_allowed_ = false;
  bool read_ahead_on_ = false;
  std::future<std::int64_t> ahead_;  // values read by the read-ahead of window ahead_window_
  int ahead_window_ = -1;
  std::int64_t read_ahead_loads_ = 0;
  std::int64_t loads_ = 0;
  std::int64_t local_points_ = 0;
  double read_seconds_ = 0.0;  // inside Load, since the stream was made
  std::vector<StreamPassTiming> passes_;
};

// Collective. io::DigestLocalData of the same data, read window by window from `stream`
// (one read of the rank's points; a read error is agreed).
std::string DigestStreamedData(const Comm& comm, const io::LocalData& layout, BlockStream& stream);

}  // namespace homodyne::nlsq
