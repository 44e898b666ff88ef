#include "nuts/uturn.h"

namespace homodyne::nuts {
namespace {

double Dot(std::span<const double> a, std::span<const double> b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

std::vector<double> Sum(std::span<const double> a, std::span<const double> b) {
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

}  // namespace

bool NoUTurn(std::span<const double> p_sharp_minus, std::span<const double> p_sharp_plus,
             std::span<const double> rho) {
  return Dot(p_sharp_plus, rho) > 0.0 && Dot(p_sharp_minus, rho) > 0.0;
}

bool MergedSpanContinues(const SubtreeEnds& a, const SubtreeEnds& b) {
  bool persist = NoUTurn(a.p_sharp_first, b.p_sharp_last, Sum(a.rho, b.rho));
  persist = NoUTurn(a.p_sharp_first, b.p_sharp_first, Sum(a.rho, b.p_first)) && persist;
  persist = NoUTurn(a.p_sharp_last, b.p_sharp_last, Sum(b.rho, a.p_last)) && persist;
  return persist;
}

}  // namespace homodyne::nuts
