// HOMODYNE_SIMD_CLONES: compile a hot loop three times, for x86-64-v4 (AVX-512), x86-64-v3
// (AVX2 + FMA) and the baseline, and pick the version at load time (GCC/Clang function
// multi-versioning). Empty elsewhere.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(HOMODYNE_NO_SIMD_CLONES)
#define HOMODYNE_SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HOMODYNE_SIMD_CLONES
#endif
