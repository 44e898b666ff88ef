// A temporary directory agreed by all ranks of a communicator (for MPI tests that share
// files): named after rank 0's pid, removed at the end by rank 0.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "homodyne/parallel/comm.h"

namespace homodyne::testing {

class SharedDir {
 public:
  // `create`: rank 0 creates the (empty) directory; otherwise it does not exist at first.
  SharedDir(const Comm& comm, const std::string& stem, bool create = false) : comm_(comm) {
    int pid = static_cast<int>(::getpid());
    MPI_Bcast(&pid, 1, MPI_INT, 0, comm.get());
    path_ = std::filesystem::temp_directory_path() /
            ("homodyne_mpi_" + std::to_string(pid) + "_" + stem);
    if (comm.is_root()) {
      std::filesystem::remove_all(path_);
      if (create) std::filesystem::create_directories(path_);
    }
    comm.Barrier();
  }
  ~SharedDir() {
    comm_.Barrier();
    if (comm_.is_root()) std::filesystem::remove_all(path_);
  }
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  const Comm& comm_;
  std::filesystem::path path_;
};

}  // namespace homodyne::testing
