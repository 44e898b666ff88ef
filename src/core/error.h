// Raising errors inside homodyne-hpc: the Error type and exit codes are public
// (homodyne/error.h); these are the shorthands and the invariant check.
#pragma once

#include <string>

#include "homodyne/error.h"

namespace homodyne {

// Shorthands for the common kinds.
[[noreturn]] void ThrowBadInput(std::string message, std::string file = {}, std::string key = {});
[[noreturn]] void ThrowIoError(std::string message, std::string file = {}, std::string key = {});
[[noreturn]] void ThrowInternal(std::string message);

namespace detail {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line,
                              const std::string& message);
}  // namespace detail

}  // namespace homodyne

// Invariant check: a violated condition is a bug and becomes an internal error that
// names the source location. Not for validating user input (use ThrowBadInput).
#define HOMODYNE_CHECK(condition, message)                                        \
  do {                                                                            \
    if (!(condition)) {                                                           \
      ::homodyne::detail::CheckFailed(#condition, __FILE__, __LINE__, (message)); \
    }                                                                             \
  } while (false)
