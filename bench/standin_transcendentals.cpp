// Cheap stand-ins for the kernel's per-point sines, linked only into bench_kernel_standins
// (bench/CMakeLists.txt), whose copy of src/model/kernel_chunk.cpp calls them instead of
// FastSin and FastSinCos. Timing only: the values are wrong (but finite and small, so the
// shear factors take the same branches). The difference between the passes of bench_kernel and
// bench_kernel_standins is what the sines of the direct columns cost
// (bench/run_kernel_bounds.sh).
namespace homodyne::model {

void StandinFastSin(const double* x, double* s, int n) {
  for (int i = 0; i < n; ++i) s[i] = 1e-3 * x[i];
}

void StandinFastSinCos(const double* x, double* s, double* c, int n) {
  for (int i = 0; i < n; ++i) {
    s[i] = 1e-3 * x[i];
    c[i] = 1.0 - 1e-3 * x[i];
  }
}

}  // namespace homodyne::model
