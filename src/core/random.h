// Counter-based random streams (Philox4x64-10, Random123).
//
// A stream is identified by what it is for, never by where it runs: the key is
// (seed, stream_a) and the counter carries stream_b, e.g. (seed, shard, chain) for a
// NUTS chain or (seed, angle, 0) for synthetic noise. The same identity gives the same
// numbers on any rank, thread or restart; the whole state is four integers, so
// checkpointing a stream is trivial and resuming is exact.
#pragma once

#include <cstdint>

namespace homodyne {

struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t stream_a = 0;
  std::uint64_t stream_b = 0;
  std::uint64_t position = 0;  // 64-bit words consumed so far
};

class CounterRng {
 public:
  CounterRng(std::uint64_t seed, std::uint64_t stream_a, std::uint64_t stream_b = 0);
  explicit CounterRng(const RngState& state);

  std::uint64_t NextU64();
  // Uniform on the open interval (0, 1), 53 random bits.
  double Uniform();
  // Standard normal (Box–Muller; consumes two words per call, keeps no cache so that
  // the state stays four integers).
  double Normal();

  const RngState& state() const { return state_; }

 private:
  void Refill();

  RngState state_;
  std::uint64_t block_[4] = {};
  std::uint64_t block_index_ = ~std::uint64_t{0};  // counter of the block in block_
};

}  // namespace homodyne
