// The no-U-turn criterion of multinomial NUTS, including the two extra checks across
// the seam between two merged subtrees.
//
// A span of states with end velocities p♯₋, p♯₊ and summed momentum ρ (Σ p over the
// span's states) keeps going while p♯₋·ρ > 0 and p♯₊·ρ > 0.
#pragma once

#include <span>
#include <vector>

namespace homodyne::nuts {

// True when the span has NOT made a U-turn (the trajectory may continue).
bool NoUTurn(std::span<const double> p_sharp_minus, std::span<const double> p_sharp_plus,
             std::span<const double> rho);

// What the merge checks need to know about one subtree: momentum and velocity at its
// two ends (first and last in the order of the merged span) and its summed momentum.
struct SubtreeEnds {
  std::vector<double> p_first;        // p at the end adjacent to the outside of the merge
  std::vector<double> p_sharp_first;  // p♯ at that end
  std::vector<double> p_last;         // p at the end adjacent to the seam
  std::vector<double> p_sharp_last;   // p♯ at that end
  std::vector<double> rho;            // Σ p over the subtree's states
};

// Merging `a` followed by `b` (a.last is adjacent to b.first). True when all three
// checks pass:
//   1. the whole span:        a.p♯_first, b.p♯_last,  ρ_a + ρ_b
//   2. a plus b's first state: a.p♯_first, b.p♯_first, ρ_a + b.p_first
//   3. b plus a's last state:  a.p♯_last,  b.p♯_last,  ρ_b + a.p_last
// Checks 2 and 3 catch U-turns that happen exactly across the seam.
bool MergedSpanContinues(const SubtreeEnds& a, const SubtreeEnds& b);

}  // namespace homodyne::nuts
