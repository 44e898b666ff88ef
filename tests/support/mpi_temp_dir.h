// A temporary directory agreed by all ranks of a communicator, for MPI tests whose ranks
// share files: rank 0 creates a unique directory (MakeUniqueTempDir) and broadcasts its
// path; at the end, after a barrier, rank 0 removes it with everything in it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include "parallel/comm.h"
#include "temp_dir.h"

namespace homodyne::testing {

class MpiTempDir {
 public:
  // Collective over `comm`. path() is `stem` inside the unique directory: with `create`,
  // rank 0 creates it (empty); otherwise it does not exist at first (for tests of code that
  // makes its own folder). Throws on every rank if rank 0 cannot create the directory.
  MpiTempDir(const Comm& comm, const std::string& stem, bool create = false) : comm_(comm) {
    std::string unique;  // rank 0's directory; empty if it could not be made
    std::string why;
    if (comm.is_root()) {
      try {
        unique = MakeUniqueTempDir("mpi_" + stem).string();
        if (create) std::filesystem::create_directory(std::filesystem::path(unique) / stem);
      } catch (const std::exception& e) {
        why = e.what();
        if (!unique.empty()) {
          std::error_code ec;
          std::filesystem::remove_all(unique, ec);
        }
        unique.clear();
      }
    }
    int length = static_cast<int>(unique.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, comm.get());
    if (length == 0) {
      throw std::runtime_error("rank 0 could not create the temporary directory for " + stem +
                               (why.empty() ? std::string() : ": " + why));
    }
    unique.resize(static_cast<std::size_t>(length));
    MPI_Bcast(unique.data(), length, MPI_CHAR, 0, comm.get());
    root_ = unique;
    path_ = root_ / stem;
  }
  ~MpiTempDir() {
    MPI_Barrier(comm_.get());  // every rank is done with the files
    if (comm_.is_root()) {
      std::error_code ec;  // a destructor does not throw
      std::filesystem::remove_all(root_, ec);
    }
  }
  MpiTempDir(const MpiTempDir&) = delete;
  MpiTempDir& operator=(const MpiTempDir&) = delete;

  // `stem` inside the unique directory (created only with `create`).
  const std::filesystem::path& path() const { return path_; }
  // The unique directory itself, which exists on every rank from construction on.
  const std::filesystem::path& root() const { return root_; }
  // The path of `name` (a file or folder, not created) inside the unique directory.
  std::string file(const std::string& name) const { return (root_ / name).string(); }

 private:
  const Comm& comm_;
  std::filesystem::path root_;
  std::filesystem::path path_;
};

}  // namespace homodyne::testing
