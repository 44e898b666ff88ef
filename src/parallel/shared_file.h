// A file written by the ranks of a communicator together through MPI-IO (RAII): created
// collectively, each rank writing its own byte ranges independently at explicit offsets,
// synced and closed collectively. MPI-IO rather than each rank's own pwrite, because on the
// parallel file systems of a cluster (and NFS) only MPI-IO keeps concurrent writes of
// neighbouring, unaligned ranges from clobbering each other.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <span>

#include "parallel/comm.h"

namespace homodyne {

class SharedFile {
 public:
  // Collective: creates `path` (truncated if it exists), write-only. An I/O Error names it.
  SharedFile(const Comm& comm, std::filesystem::path path);
  // Closes the file if Close() was not reached (collective, as every rank unwinds after an
  // agreed error).
  ~SharedFile();
  SharedFile(const SharedFile&) = delete;
  SharedFile& operator=(const SharedFile&) = delete;

  // Independent: `bytes` at `offset` (in pieces below MPI's int count limit).
  void WriteAt(std::uint64_t offset, std::span<const unsigned char> bytes);
  // Collective: flushes the ranks' writes to storage and closes the file.
  void Close();

 private:
  std::filesystem::path path_;
  MPI_File file_ = MPI_FILE_NULL;
};

}  // namespace homodyne
