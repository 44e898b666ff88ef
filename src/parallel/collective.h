// Collective error agreement.
//
// MPI collectives deadlock when one rank throws and the others enter the next
// collective call. Every phase that can fail on a subset of ranks is therefore run
// through RunCollectively (or ends with AgreeOnError): all ranks learn whether any
// rank failed, and then every rank throws the same homodyne::Error — the one raised
// by the lowest failing rank, tagged with that rank — so the job ends cleanly with the
// message printed once by rank 0.
#pragma once

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "parallel/comm.h"

namespace homodyne {

// Collective over `comm`. `local_error` is null on ranks that succeeded. Returns
// normally on every rank if no rank failed; otherwise throws the agreed Error on
// every rank.
void AgreeOnError(const Comm& comm, std::exception_ptr local_error);

// Runs fn() on every rank of comm, then agrees on failure (see AgreeOnError).
template <typename Fn>
auto RunCollectively(const Comm& comm, Fn&& fn) -> std::invoke_result_t<Fn> {
  using Result = std::invoke_result_t<Fn>;
  std::exception_ptr error;
  if constexpr (std::is_void_v<Result>) {
    try {
      std::forward<Fn>(fn)();
    } catch (...) {
      error = std::current_exception();
    }
    AgreeOnError(comm, error);
  } else {
    std::optional<Result> result;
    try {
      result.emplace(std::forward<Fn>(fn)());
    } catch (...) {
      error = std::current_exception();
    }
    AgreeOnError(comm, error);
    return std::move(*result);
  }
}

}  // namespace homodyne
