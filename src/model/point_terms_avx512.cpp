// The point loops with a native 8-lane vector, compiled for x86-64-v4 (AVX-512); point_terms.cpp
// calls them when the CPU has it. See point_terms_impl.h.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HOMODYNE_NO_SIMD_CLONES)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "model/constants.h"
#include "point_terms.h"

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define HOMODYNE_POINT_TERMS_NATIVE_V8 1
#define HOMODYNE_POINT_TERMS_FMA 1
#define HOMODYNE_POINT_TERMS_NS avx512
#define HOMODYNE_POINT_TERMS_TARGET
#include "point_terms_impl.h"
#pragma GCC pop_options
#endif
