#include "core/fault_injection.h"

#include <charconv>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <mpi.h>

#include "core/error.h"

namespace homodyne {

bool FailureRequested(std::string_view spec, std::string_view stage, int rank) {
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view entry = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const size_t at = entry.find('@');
    if (at == std::string_view::npos || entry.substr(0, at) != stage) continue;
    std::string_view rank_text = entry.substr(at + 1);
    if (rank_text == "*") return true;
    int wanted = -1;
    auto [ptr, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), wanted);
    if (ec == std::errc() && ptr == rank_text.data() + rank_text.size() && wanted == rank) {
      return true;
    }
  }
  return false;
}

void MaybeInjectFailure(std::string_view stage, int rank) {
  const char* spec = std::getenv(kFailureInjectionVariable);
  if (spec == nullptr || !FailureRequested(spec, stage, rank)) return;
  throw Error(
      ErrorKind::kInternal,
      fmt::format("injected failure at stage '{}' ({}={})", stage, kFailureInjectionVariable, spec),
      {{}, {}, rank});
}

void MaybeInjectFailure(std::string_view stage) {
  if (std::getenv(kFailureInjectionVariable) == nullptr) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  int rank = 0;
  if (initialized != 0) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MaybeInjectFailure(stage, rank);
}

}  // namespace homodyne
