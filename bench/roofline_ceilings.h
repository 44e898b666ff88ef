// The two hardware ceilings of the roofline model, measured on this machine: sustained
// memory bandwidth (STREAM triad) and peak double-precision FMA throughput of one core.
#pragma once

namespace homodyne::bench {

// Bytes per second of a STREAM triad a = b + s·c over arrays far larger than the caches
// (24 bytes counted per element, as STREAM does). Single thread.
double MeasureTriadBandwidth(double seconds_budget = 0.5);

// Double-precision flops per second of one core with register-resident FMA chains on
// the widest vectors this CPU supports (AVX-512, AVX2+FMA, else SSE2 mul+add).
double MeasurePeakFlops(double seconds_budget = 0.3);

// The instruction set MeasurePeakFlops used ("avx512f", "avx2+fma" or "sse2").
const char* PeakFlopsIsa();

}  // namespace homodyne::bench
