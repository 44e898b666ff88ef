#include "core/random.h"

#include <Random123/philox.h>

#include <cmath>
#include <numbers>

namespace homodyne {

CounterRng::CounterRng(std::uint64_t seed, std::uint64_t stream_a, std::uint64_t stream_b)
    : state_{seed, stream_a, stream_b, 0} {}

CounterRng::CounterRng(const RngState& state) : state_(state) {}

void CounterRng::Refill() {
  r123::Philox4x64 philox;
  const r123::Philox4x64::key_type key = {{state_.seed, state_.stream_a}};
  const std::uint64_t block = state_.position / 4;
  const r123::Philox4x64::ctr_type counter = {{block, state_.stream_b, 0, 0}};
  const auto out = philox(counter, key);
  for (int i = 0; i < 4; ++i) block_[i] = out.v[i];
  block_index_ = block;
}

std::uint64_t CounterRng::NextU64() {
  if (state_.position / 4 != block_index_) Refill();
  const std::uint64_t value = block_[state_.position % 4];
  ++state_.position;
  return value;
}

double CounterRng::Uniform() {
  // 53 high bits, shifted by half a step so 0 and 1 are never returned.
  return (static_cast<double>(NextU64() >> 11) + 0.5) * 0x1.0p-53;
}

double CounterRng::Normal() {
  const double u1 = Uniform();
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace homodyne
