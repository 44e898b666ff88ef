#include "core/library_threads.h"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>

namespace homodyne {
namespace {

using SetThreads = void (*)(int);

// Sets `variable` to 1 if unset; `setter` is the runtime's own call, if loaded.
std::string LimitOne(const char* variable, const char* setter) {
  if (const char* value = std::getenv(variable); value != nullptr) {
    return fmt::format("{}={} (from the environment, kept)", variable, value);
  }
  setenv(variable, "1", 0);
  std::string note = fmt::format("{} was unset: set to 1", variable);
  if (void* symbol = dlsym(RTLD_DEFAULT, setter); symbol != nullptr) {
    reinterpret_cast<SetThreads>(symbol)(1);
    note += fmt::format(" and {}(1) called (runtime already loaded)", setter);
  }
  return note;
}

}  // namespace

std::vector<std::string> LimitLibraryThreads() {
  return {LimitOne("OMP_NUM_THREADS", "omp_set_num_threads"),
          LimitOne("OPENBLAS_NUM_THREADS", "openblas_set_num_threads")};
}

}  // namespace homodyne
