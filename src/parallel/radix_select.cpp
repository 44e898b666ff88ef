#include "parallel/radix_select.h"

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "parallel/ordered_key.h"

namespace homodyne {
namespace {

double FromKey(std::uint64_t k) { return detail::FromOrderedKey(k); }

}  // namespace

RadixSelect::RadixSelect(int n_sets)
    : n_sets_(n_sets),
      set_hist_(static_cast<std::size_t>(n_sets), std::vector<std::int64_t>(1u << kDigitBits, 0)),
      counts_(static_cast<std::size_t>(n_sets), 0),
      set_queries_(static_cast<std::size_t>(n_sets)) {}

RadixSelect::RadixSelect(int n_sets, double typical) : RadixSelect(n_sets) {
  HOMODYNE_CHECK(std::isfinite(typical), "radix select: the typical value must be finite");
  typical_digit_ = KeyOf(typical) >> (64 - kDigitBits);
  typical_hist_.assign(static_cast<std::size_t>(n_sets),
                       std::vector<std::int64_t>(std::size_t{1} << kDigitBits, 0));
}

void RadixSelect::Descend(Query& q, const std::vector<std::int64_t>& hist, int digit_bits) {
  std::int64_t below = 0;
  for (std::size_t b = 0; b < hist.size(); ++b) {
    if (below + hist[b] > q.k) {
      q.k -= below;
      q.prefix = (q.prefix << digit_bits) | b;
      q.bits += digit_bits;
      return;
    }
    below += hist[b];
  }
  ThrowInternal("radix select: rank beyond the set's count");
}

void RadixSelect::FinishPass(const Comm& comm) {
  if (first_pass_) {
    // Every set's histograms in one sum.
    std::vector<std::int64_t> all;
    for (const auto& h : set_hist_) all.insert(all.end(), h.begin(), h.end());
    for (const auto& h : typical_hist_) all.insert(all.end(), h.begin(), h.end());
    MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_INT64_T, MPI_SUM,
                  comm.get());
    auto from = all.begin();
    for (std::size_t s = 0; s < set_hist_.size(); ++s) {
      std::copy_n(from, set_hist_[s].size(), set_hist_[s].begin());
      from += static_cast<std::ptrdiff_t>(set_hist_[s].size());
      std::int64_t n = 0;
      for (std::int64_t c : set_hist_[s]) n += c;
      counts_[s] = n;
    }
    for (auto& h : typical_hist_) {
      std::copy_n(from, h.size(), h.begin());
      from += static_cast<std::ptrdiff_t>(h.size());
    }
    first_pass_ = false;
    return;
  }
  std::vector<std::int64_t> all;
  for (const Query& q : queries_) all.insert(all.end(), q.hist.begin(), q.hist.end());
  MPI_Allreduce(MPI_IN_PLACE, all.data(), static_cast<int>(all.size()), MPI_INT64_T, MPI_SUM,
                comm.get());
  std::size_t at = 0;
  for (Query& q : queries_) {
    const std::size_t width = q.hist.size();
    if (q.bits < 64) {
      const std::vector<std::int64_t> h(all.begin() + static_cast<std::ptrdiff_t>(at),
                                        all.begin() + static_cast<std::ptrdiff_t>(at + width));
      Descend(q, h, DigitBits(q.bits));
    }
    at += width;
    q.hist.assign(q.bits < 64 ? (std::size_t{1} << DigitBits(q.bits)) : 0, 0);
  }
}

std::int64_t RadixSelect::count(int set) const {
  HOMODYNE_CHECK(!first_pass_, "radix select: counts are known after the first pass");
  return counts_.at(static_cast<std::size_t>(set));
}

int RadixSelect::AddQuery(int set, std::int64_t k) {
  HOMODYNE_CHECK(!first_pass_, "radix select: queries follow the first pass");
  HOMODYNE_CHECK(k >= 0 && k < count(set), "radix select: rank outside the set");
  Query q;
  q.set = set;
  q.k = k;
  Descend(q, set_hist_[static_cast<std::size_t>(set)], kDigitBits);
  if (!typical_hist_.empty() && q.prefix == typical_digit_) {
    Descend(q, typical_hist_[static_cast<std::size_t>(set)], kDigitBits);
  }
  q.hist.assign(std::size_t{1} << DigitBits(q.bits), 0);
  queries_.push_back(std::move(q));
  set_queries_[static_cast<std::size_t>(set)].push_back(static_cast<int>(queries_.size()) - 1);
  return static_cast<int>(queries_.size()) - 1;
}

bool RadixSelect::done() const {
  if (first_pass_) return false;
  for (const Query& q : queries_) {
    if (q.bits < 64) return false;
  }
  return true;
}

double RadixSelect::result(int query) const {
  const Query& q = queries_.at(static_cast<std::size_t>(query));
  HOMODYNE_CHECK(q.bits == 64, "radix select: query not resolved yet");
  return FromKey(q.prefix);
}

PercentileRanks PercentileRanksOf(std::int64_t n, double p) {
  if (n == 0) ThrowBadInput("percentile of an empty sample");
  PercentileRanks r;
  const double h = static_cast<double>(n - 1) * (p / 100.0);
  const double floor_h = std::floor(h);
  r.lo = static_cast<std::int64_t>(floor_h);
  if (r.lo >= n - 1) {
    r.lo = n - 1;
    r.single = true;
    return r;
  }
  r.g = h - floor_h;
  return r;
}

double CombinePercentile(const PercentileRanks& r, double a, double b) {
  if (r.single) return a;
  const double diff = b - a;
  return r.g >= 0.5 ? b - diff * (1.0 - r.g) : a + diff * r.g;  // numpy's lerp
}

}  // namespace homodyne
