// The point loops with the 8 lanes as two 4-lane halves for the baseline ISA (fma() per lane:
// slow without FMA hardware, the same bits), and the public entry points, which take the
// AVX-512 copy (point_terms_avx512.cpp) or the AVX2 + FMA copy (point_terms_avx2.cpp) when the
// CPU has it. All copies give the same bits (point_terms_impl.h).
#include <cstdlib>

#define HOMODYNE_POINT_TERMS_NATIVE_V8 0
#define HOMODYNE_POINT_TERMS_FMA 0
#define HOMODYNE_POINT_TERMS_NS halves
#define HOMODYNE_POINT_TERMS_TARGET
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HOMODYNE_NO_SIMD_CLONES)
#define HOMODYNE_POINT_TERMS_X86_COPIES 1
#else
#define HOMODYNE_POINT_TERMS_X86_COPIES 0
#endif
#include "point_terms_impl.h"

namespace homodyne::model::detail {

#if HOMODYNE_POINT_TERMS_X86_COPIES
namespace {
// False when the environment variable `off` is set and not empty (the tests' switch).
bool NotSwitchedOff(const char* off) {
  const char* value = std::getenv(off);
  return value == nullptr || *value == '\0';
}
}  // namespace

bool HasAvx512() {
  static const bool has = NotSwitchedOff("HOMODYNE_NO_AVX512") && [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
  }();
  return has;
}
bool HasAvx2Fma() {
  static const bool has = NotSwitchedOff("HOMODYNE_NO_AVX2") && [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}
#define HOMODYNE_DISPATCH(call) \
  return HasAvx512() ? avx512::call : HasAvx2Fma() ? avx2::call : halves::call
#else
bool HasAvx512() { return false; }
bool HasAvx2Fma() { return false; }
#define HOMODYNE_DISPATCH(call) return halves::call
#endif

void FoldLaminarColumns(const PointBlock& block, int n, double* jtj, double* jtr) {
  HOMODYNE_DISPATCH(FoldLaminarColumns(block, n, jtj, jtr));
}
void FoldStaticColumns(const PointBlock& block, int n, double* jtj, double* jtr) {
  HOMODYNE_DISPATCH(FoldStaticColumns(block, n, jtj, jtr));
}
void GradientLaminarBlock(const PointBlock& in, double* sums) {
  HOMODYNE_DISPATCH(GradientLaminarBlock(in, sums));
}
void GradientStaticBlock(const PointBlock& in, double* sums) {
  HOMODYNE_DISPATCH(GradientStaticBlock(in, sums));
}
void NormalLaminarBlock(const PointBlock& in, double* sums) {
  HOMODYNE_DISPATCH(NormalLaminarBlock(in, sums));
}
void NormalStaticBlock(const PointBlock& in, double* sums) {
  HOMODYNE_DISPATCH(NormalStaticBlock(in, sums));
}
double Chi2Block(const PointBlock& in) { HOMODYNE_DISPATCH(Chi2Block(in)); }
void ModelBlock(const PointBlock& in, double* out) { HOMODYNE_DISPATCH(ModelBlock(in, out)); }
#undef HOMODYNE_DISPATCH

}  // namespace homodyne::model::detail
