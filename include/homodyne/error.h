// The errors of the homodyne library.
//
// Every failure that reaches a caller is a homodyne::Error: a kind, a message, and the
// context needed to act on it (the input file, the config key or HDF5 dataset, the MPI
// rank that raised it). A collective call (FitNlsq, FitCmc) throws the same error on every
// rank of its communicator when the ranks agreed on it (bad options or data); a failure that
// only one rank saw ends the job with MPI_Abort instead of leaving the others waiting.
// The command-line programs map the kinds to exit codes (docs/errors.md).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "homodyne/export.h"

namespace homodyne {

enum class ErrorKind {
  kBadInput,      // user input (config, CLI, data file) violates a documented rule
  kIo,            // a file could not be read or written
  kNumerical,     // the computation failed (NaN, non-convergence that cannot be reported)
  kInternal,      // invariant broken or unexpected library failure: a bug
  kCheckpointed,  // not a failure: the run stopped after writing a resumable checkpoint
};

// "bad input", "I/O error", "numerical failure", "internal error", "checkpointed".
HOMODYNE_API std::string_view ToString(ErrorKind kind);

// Where an error comes from. Empty fields are omitted from messages.
struct ErrorContext {
  std::string file;  // input or output file involved
  std::string key;   // config key, HDF5 dataset path or CLI flag
  int rank = -1;     // MPI rank that raised it (-1: unknown or not relevant)
};

class ErrorAgreement;  // the library's collective error handling (not part of the API)

class HOMODYNE_API Error : public std::runtime_error {
 public:
  // what() is "<file>: <key>: <message> (rank R)" without the empty parts.
  Error(ErrorKind kind, std::string message, ErrorContext context = {});

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }  // without the context
  const ErrorContext& context() const { return context_; }

 private:
  friend class ErrorAgreement;
  ErrorKind kind_;
  std::string message_;
  ErrorContext context_;
  bool agreed_ = false;
};

}  // namespace homodyne
