// A file written by the ranks of a communicator together (RAII): created (or opened)
// collectively, each rank writing its own byte ranges independently at explicit offsets,
// synced and closed collectively.
//
// Two routes to the file. Through MPI-IO, because on the parallel file systems of a cluster
// (and NFS) only MPI-IO keeps concurrent writes of neighbouring, unaligned ranges from
// clobbering each other. And, for the whole 4 KiB pages inside a large range, each rank's own
// descriptor opened with O_DIRECT (where the file system allows it): no page-cache copy, and
// no page that two ranks or the two routes share, since every page written directly is
// written by one rank alone, whole, and by no MPI-IO write. Result files of gigabytes are
// written at the device's rate rather than the page cache's (docs/outputs.md).
// HOMODYNE_NO_DIRECT_IO=1 keeps every byte on the MPI-IO route.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

#include "parallel/comm.h"

namespace homodyne {

class SharedFile {
 public:
  enum class Open {
    kCreate,    // created, truncated if it exists
    kExisting,  // an existing file (e.g. laid out by one rank first), its bytes kept
  };
  // Collective, write-only. An I/O Error names the file.
  SharedFile(const Comm& comm, std::filesystem::path path, Open open = Open::kCreate);
  // Closes the file if Close() was not reached (collective, as every rank unwinds after an
  // agreed error).
  ~SharedFile();
  SharedFile(const SharedFile&) = delete;
  SharedFile& operator=(const SharedFile&) = delete;

  // Independent: `bytes` at `offset`. The whole pages of a large range are copied and
  // written by a thread of this rank's while the caller goes on; a failure there is thrown
  // by a later WriteAt or by Close.
  void WriteAt(std::uint64_t offset, std::span<const unsigned char> bytes);
  // Collective: waits for this rank's writes, flushes every rank's to storage and closes the
  // file; throws what failed on this rank (the caller agrees on errors).
  void Close();

  // Bytes this rank wrote with O_DIRECT so far (0 when the file system refused it).
  std::uint64_t direct_bytes() const;

 private:
  void WriteThroughMpi(std::uint64_t offset, std::span<const unsigned char> bytes);
  // Whole aligned pages; false (nothing written) when O_DIRECT turns out to be refused.
  bool WriteDirect(std::uint64_t offset, std::span<const unsigned char> bytes);

  std::filesystem::path path_;
  MPI_File file_ = MPI_FILE_NULL;
  struct Direct;
  std::unique_ptr<Direct> direct_;
};

}  // namespace homodyne
