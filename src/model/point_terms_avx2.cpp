// The point loops with the 8 lanes as two 4-lane halves, compiled for x86-64-v3 (AVX2 + FMA);
// point_terms.cpp calls them when the CPU has it and no AVX-512. See point_terms_impl.h.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HOMODYNE_NO_SIMD_CLONES)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/constants.h"
#include "point_terms.h"

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define HOMODYNE_POINT_TERMS_NATIVE_V8 0
#define HOMODYNE_POINT_TERMS_FMA 1
#define HOMODYNE_POINT_TERMS_NS avx2
#define HOMODYNE_POINT_TERMS_TARGET
#include "point_terms_impl.h"
#pragma GCC pop_options
#endif
