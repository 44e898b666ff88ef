#include "parallel/collective.h"

#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {
namespace {

// The agreed description of a failure, as broadcast from the failing rank.
struct FailureRecord {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  std::string file;
  std::string key;
};

FailureRecord Describe(const std::exception_ptr& error) {
  FailureRecord record;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    record = {e.kind(), e.message(), e.context().file, e.context().key};
  } catch (const std::bad_alloc&) {
    record.message = "out of memory";
  } catch (const std::exception& e) {
    record.message = e.what();
  } catch (...) {
    record.message = "unknown exception";
  }
  return record;
}

void BroadcastRecord(FailureRecord& record, int root, MPI_Comm comm, bool is_root) {
  std::array<int, 4> header{};
  if (is_root) {
    header = {static_cast<int>(record.kind), static_cast<int>(record.message.size()),
              static_cast<int>(record.file.size()), static_cast<int>(record.key.size())};
  }
  MPI_Bcast(header.data(), 4, MPI_INT, root, comm);
  const size_t total = static_cast<size_t>(header[1]) + static_cast<size_t>(header[2]) +
                       static_cast<size_t>(header[3]);
  std::string text;
  if (is_root) {
    text = record.message + record.file + record.key;
  } else {
    text.resize(total);
  }
  if (total > 0) MPI_Bcast(text.data(), static_cast<int>(total), MPI_CHAR, root, comm);
  if (!is_root) {
    auto m = static_cast<size_t>(header[1]);
    auto f = static_cast<size_t>(header[2]);
    auto k = static_cast<size_t>(header[3]);
    record.kind = static_cast<ErrorKind>(header[0]);
    record.message.assign(text.data(), m);
    record.file.assign(text.data() + m, f);
    record.key.assign(text.data() + m + f, k);
  }
}

}  // namespace

void AgreeOnError(const Comm& comm, std::exception_ptr local_error) {
  if (comm.get() == MPI_COMM_NULL) ThrowInternal("AgreeOnError called with MPI_COMM_NULL");
  const int sentinel = comm.size();
  int candidate = local_error ? comm.rank() : sentinel;
  int first_failing = sentinel;
  MPI_Allreduce(&candidate, &first_failing, 1, MPI_INT, MPI_MIN, comm.get());
  if (first_failing == sentinel) return;

  int failed = local_error ? 1 : 0;
  int n_failed = 0;
  MPI_Allreduce(&failed, &n_failed, 1, MPI_INT, MPI_SUM, comm.get());

  // Every rank already holds the same agreed error (an inner agreement of a nested
  // collective phase): it passes through unchanged, not re-tagged as every rank's own.
  int agreed_here = 0;
  if (local_error) {
    try {
      std::rethrow_exception(local_error);
    } catch (const Error& e) {
      agreed_here = IsAgreed(e) ? 1 : 0;
    } catch (...) {
    }
  }
  int all_agreed = 0;
  MPI_Allreduce(&agreed_here, &all_agreed, 1, MPI_INT, MPI_MIN, comm.get());
  if (all_agreed == 1) std::rethrow_exception(local_error);

  const bool is_root = comm.rank() == first_failing;
  FailureRecord record;
  if (is_root) record = Describe(local_error);
  BroadcastRecord(record, first_failing, comm.get(), is_root);

  std::string message = record.message;
  if (n_failed > 1) message += fmt::format(" [{} ranks failed; first shown]", n_failed);
  throw MarkAgreed(
      Error(record.kind, std::move(message), {record.file, record.key, first_failing}));
}

}  // namespace homodyne
