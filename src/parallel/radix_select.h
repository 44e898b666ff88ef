// Exact order statistics of weighted multisets that are too large to hold: the values are
// streamed past in repeated passes, and each pass fixes the next 11 bits of every wanted
// value's order-preserving 64-bit image from a histogram summed over the ranks. Six passes
// give the exact value, with memory of 2^11 counts per set (first pass) or per query.
//
// The result equals DistributedKthSmallest's bit for bit (±0 are one value, reported as
// −0 as the bisection does), so a streaming fit's starting point is the in-core one.
//
// Usage: for each pass, Add every value of every set, then FinishPass (collective).
// After the first pass count(set) is known and queries can be added; repeat passes until
// done().
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "parallel/comm.h"
#include "parallel/ordered_key.h"

namespace homodyne {

class RadixSelect {
 public:
  explicit RadixSelect(int n_sets);
  // The same, where most values are expected to share `typical`'s first digit (its sign and
  // binade pair; c2 values lie around 1): the first pass also histograms the second digit of
  // those values, so a query that lands on that digit is two digits deep after one pass and
  // the selection takes five passes instead of six. The results are the same bits either way.
  RadixSelect(int n_sets, double typical);

  // During a pass. Non-finite values are not allowed (callers skip and report them).
  void Add(int set, double value, std::int64_t weight) { AddKey(set, KeyOf(value), weight); }
  // The same with the value's key (KeyOf), for a caller that adds one value to several sets:
  // the key is then computed once. Returns whether the value is wanted: in the first pass
  // always; after it, whether it counted, i.e. shares the prefix fixed so far of an
  // unresolved query of `set`. The values wanted in a pass are a superset of what every later
  // pass counts, so a caller that keeps them can replay them instead of streaming all values
  // past again, with the same histograms and results.
  bool AddKey(int set, std::uint64_t key, std::int64_t weight) {
    if (first_pass_) {
      AddToSet(set, key, weight);
      return true;
    }
    return AddToQueries(set, key, weight);
  }
  // The order-preserving image of a finite value that the passes select on (±0 one key).
  static std::uint64_t KeyOf(double value) {
    return detail::OrderedKey(value == 0.0 ? -0.0 : value);
  }
  // Collective over `comm`: sums the pass's histograms and advances every query.
  void FinishPass(const Comm& comm);

  bool first_pass_done() const { return !first_pass_; }
  std::int64_t count(int set) const;  // weighted count of `set` (after the first pass)

  // After the first pass: the k-th smallest (0-based) of `set`; returns the query id.
  int AddQuery(int set, std::int64_t k);
  // True when every query is resolved (possibly right after the first pass).
  bool done() const;
  double result(int query) const;

 private:
  struct Query {
    int set = 0;
    std::int64_t k = 0;        // rank within the values matching `prefix`
    std::uint64_t prefix = 0;  // the top `bits` bits of the key
    int bits = 0;              // 0..64
    std::vector<std::int64_t> hist;
  };
  static constexpr int kDigitBits = 11;
  // The bits the next digit of a query fixes, `bits_done` being fixed already.
  static constexpr int DigitBits(int bits_done) { return std::min(kDigitBits, 64 - bits_done); }

  void AddToSet(int set, std::uint64_t key, std::int64_t weight) {
    const std::uint64_t digit = key >> (64 - kDigitBits);
    set_hist_[static_cast<std::size_t>(set)][digit] += weight;
    if (digit == typical_digit_) {
      typical_hist_[static_cast<std::size_t>(set)]
                   [(key >> (64 - 2 * kDigitBits)) & ((std::uint64_t{1} << kDigitBits) - 1)] +=
          weight;
    }
  }
  // Inline: called for every value of every pass after the first (the streaming fit's
  // initial scaling spent a third of its time in this call and a second loop that asked
  // whether the value was wanted).
  bool AddToQueries(int set, std::uint64_t key, std::int64_t weight) {
    bool counted = false;
    for (const int id : set_queries_[static_cast<std::size_t>(set)]) {
      Query& q = queries_[static_cast<std::size_t>(id)];
      if (q.bits >= 64 || (key >> (64 - q.bits)) != q.prefix) continue;
      const int d = DigitBits(q.bits);
      q.hist[(key >> (64 - q.bits - d)) & ((std::uint64_t{1} << d) - 1)] += weight;
      counted = true;
    }
    return counted;
  }
  static void Descend(Query& q, const std::vector<std::int64_t>& hist, int digit_bits);

  int n_sets_;
  bool first_pass_ = true;
  std::vector<std::vector<std::int64_t>> set_hist_;  // first pass: top digit per set
  // First pass: the second digit of the values whose top digit is typical_digit_ (none when
  // no typical value was given: no top digit is 2^11).
  std::uint64_t typical_digit_ = std::uint64_t{1} << kDigitBits;
  std::vector<std::vector<std::int64_t>> typical_hist_;
  std::vector<std::int64_t> counts_;
  std::vector<Query> queries_;
  std::vector<std::vector<int>> set_queries_;  // queries per set
};

// numpy.percentile (linear) of a set from its order statistics: the query ranks for p and
// the combination of their results, the same expressions as DistributedPercentile.
struct PercentileRanks {
  std::int64_t lo = 0;
  bool single = false;  // lo is the last element: the result is its value
  double g = 0.0;       // interpolation weight
};
PercentileRanks PercentileRanksOf(std::int64_t count, double p);
double CombinePercentile(const PercentileRanks& r, double a, double b);

}  // namespace homodyne
