// Error conventions of homodyne-hpc.
//
// Every failure that reaches a user is a homodyne::Error: a kind (which decides the
// process exit code), a message, and the context needed to act on it (the input file,
// the config key or HDF5 dataset, the MPI rank that raised it).
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

#include <stdexcept>
#include <string>
#include <string_view>

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

enum class ErrorKind {
  kBadInput,      // user input (config, CLI, data file) violates a documented rule
  kIo,            // a file could not be read or written (treated as bad input for exit codes)
  kNumerical,     // the computation failed (NaN, non-convergence that cannot be reported)
  kInternal,      // invariant broken or unexpected library failure: a bug
  kCheckpointed,  // not a failure: the run stopped after writing a resumable checkpoint
};

std::string_view ToString(ErrorKind kind);
ExitCode ExitCodeFor(ErrorKind kind);

// Where an error comes from. Empty fields are omitted from messages.
struct ErrorContext {
  std::string file;  // input or output file involved
  std::string key;   // config key, HDF5 dataset path or CLI flag
  int rank = -1;     // MPI rank that raised it (-1: unknown or not relevant)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, ErrorContext context = {});

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }  // without the context
  const ErrorContext& context() const { return context_; }
  ExitCode exit_code() const { return ExitCodeFor(kind_); }

  // A copy with the rank filled in (used when an error crosses ranks).
  Error WithRank(int rank) const;

  // True for an error that every rank of a communicator raised together after
  // agreeing on it (see parallel/collective.h); false for a rank-local error, which
  // the top level must treat as fatal for the whole job.
  bool agreed() const { return agreed_; }
  Error MarkAgreed() const;

 private:
  ErrorKind kind_;
  std::string message_;
  ErrorContext context_;
  bool agreed_ = false;
};

// Formats "<file>: <key>: <message> (rank R)" leaving out the empty parts.
std::string FormatErrorMessage(const std::string& message, const ErrorContext& context);

}  // namespace homodyne
