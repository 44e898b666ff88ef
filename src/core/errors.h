// Raising errors inside homodyne-hpc: the Error type is public (homodyne/error.h); the exit
// codes of the command-line programs, the collective agreement on an error, the shorthands
// and the invariant check are the library's own.
//
// Exit codes (documented in docs/errors.md):
//   0  success
//   1  internal error (a bug, an MPI/PETSc/HDF5 failure we did not expect)
//   2  bad input: config, command line or data file rejected; nothing was written
//   4  not converged: NLSQ stalled or stopped at max_iterations (results written, labelled)
//   5  misfit: NLSQ converged to an answer far above the data's noise floor (results
//      written, labelled)
//   75 checkpointed: the run stopped on a signal or time limit after writing a
//      checkpoint and can be resumed with --resume (EX_TEMPFAIL in sysexits.h)
#pragma once

#include <string>
#include <utility>

#include "homodyne/error.h"

namespace homodyne {

enum class ExitCode : int {
  kSuccess = 0,
  kInternalError = 1,
  kBadInput = 2,
  // NLSQ ended without meeting its optimality test (stalled or at max_iterations); the
  // outputs are written and labelled with that status.
  kNotConverged = 4,
  // NLSQ converged, but the answer does not describe the data: its χ² in units of the
  // data's own noise level is far above the noise floor, or per-angle scaling was held at
  // values the data contradict (docs/errors.md); the outputs are written and labelled.
  kMisfit = 5,
  kCheckpointed = 75,
};

// kBadInput and kIo → 2, kCheckpointed → 75, the others → 1.
ExitCode ExitCodeFor(ErrorKind kind);
inline ExitCode ExitCodeOf(const Error& error) { return ExitCodeFor(error.kind()); }

// An error that every rank of a communicator raised together after agreeing on it (see
// parallel/collective.h) is marked agreed; a rank-local error is not, and the top level
// treats it as fatal for the whole job.
class ErrorAgreement {
 public:
  static bool Agreed(const Error& error) { return error.agreed_; }
  static Error Marked(Error error) {
    error.agreed_ = true;
    return error;
  }
};
inline bool IsAgreed(const Error& error) { return ErrorAgreement::Agreed(error); }
inline Error MarkAgreed(Error error) { return ErrorAgreement::Marked(std::move(error)); }

// Formats "<file>: <key>: <message> (rank R)" leaving out the empty parts.
std::string FormatErrorMessage(const std::string& message, const ErrorContext& context);

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
