#include "core/errors.h"

#include <utility>

#include <fmt/format.h>

namespace homodyne {

std::string_view ToString(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return "bad input";
    case ErrorKind::kIo:
      return "I/O error";
    case ErrorKind::kNumerical:
      return "numerical failure";
    case ErrorKind::kInternal:
      return "internal error";
    case ErrorKind::kCheckpointed:
      return "checkpointed";
  }
  return "unknown error";
}

ExitCode ExitCodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
    case ErrorKind::kIo:
      return ExitCode::kBadInput;
    case ErrorKind::kCheckpointed:
      return ExitCode::kCheckpointed;
    case ErrorKind::kNumerical:
    case ErrorKind::kInternal:
      return ExitCode::kInternalError;
  }
  return ExitCode::kInternalError;
}

std::string FormatErrorMessage(const std::string& message, const ErrorContext& context) {
  std::string out;
  if (!context.file.empty()) out += context.file + ": ";
  if (!context.key.empty()) out += context.key + ": ";
  out += message;
  if (context.rank >= 0) out += fmt::format(" (rank {})", context.rank);
  return out;
}

Error::Error(ErrorKind kind, std::string message, ErrorContext context)
    : std::runtime_error(FormatErrorMessage(message, context)),
      kind_(kind),
      message_(std::move(message)),
      context_(std::move(context)) {}

void ThrowBadInput(std::string message, std::string file, std::string key) {
  throw Error(ErrorKind::kBadInput, std::move(message), {std::move(file), std::move(key), -1});
}

void ThrowIoError(std::string message, std::string file, std::string key) {
  throw Error(ErrorKind::kIo, std::move(message), {std::move(file), std::move(key), -1});
}

void ThrowInternal(std::string message) { throw Error(ErrorKind::kInternal, std::move(message)); }

namespace detail {
void CheckFailed(const char* condition, const char* file, int line, const std::string& message) {
  throw Error(ErrorKind::kInternal,
              fmt::format("check failed at {}:{}: {} ({})", file, line, message, condition));
}
}  // namespace detail

}  // namespace homodyne
