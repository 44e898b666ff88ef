// Checkpoint files (docs/checkpoints.md).
//
// A checkpoint is a flat set of named 1-D datasets (doubles, int64 or bytes), each
// chunked with a fletcher32 checksum, plus root attributes: format, kind, sequence
// number, the hashes of the run identity (effective config, input data selection), the
// rank count that wrote it and the code version. A dataset has an owner rank whose values
// it holds, so each rank can store its own part (e.g. its CMC chains): the owners send
// their values to rank 0, which alone writes the file, so that a failed write (a full
// disk) is one rank's failure outside any collective call, agreed on after it. Readers
// read every dataset on every rank (parallel HDF5), so a checkpoint resumes on any rank
// count.
//
// Files are "<dir>/<kind>_<sequence>.h5", written to ".<name>.tmp", flushed and closed,
// then renamed by rank 0 (fsync of file and directory) between barriers. The newest
// `keep_last` are kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/run_identity.h"
#include "core/log.h"
#include "parallel/comm.h"

namespace homodyne::checkpoint {

// The content of one checkpoint. Names: letters, digits, '_' and '.'; no '/'.
class CheckpointRecord {
 public:
  void PutDoubles(const std::string& name, std::vector<double> values, int owner = 0);
  void PutInts(const std::string& name, std::vector<std::int64_t> values, int owner = 0);
  void PutText(const std::string& name, const std::string& text, int owner = 0);
  void PutDouble(const std::string& name, double v) { PutDoubles(name, {v}); }
  void PutInt(const std::string& name, std::int64_t v) { PutInts(name, {v}); }

  bool Has(const std::string& name) const;
  // Throw an internal Error naming the dataset if it is absent or of another type.
  const std::vector<double>& Doubles(const std::string& name) const;
  const std::vector<std::int64_t>& Ints(const std::string& name) const;
  std::string Text(const std::string& name) const;
  double Double(const std::string& name) const;
  std::int64_t Int(const std::string& name) const;

  enum class Type : int { kDouble = 0, kInt64 = 1, kBytes = 2 };
  struct Entry {
    Type type = Type::kDouble;
    int owner = 0;
    std::vector<double> doubles;
    std::vector<std::int64_t> ints;  // also bytes, one per element
  };
  const std::map<std::string, Entry>& entries() const { return entries_; }
  std::map<std::string, Entry>& mutable_entries() { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
};

struct StoreOptions {
  std::filesystem::path dir = "./checkpoints";
  std::string kind = "nlsq";  // file name prefix and "kind" attribute
  int keep_last = 3;
  // The files go to dir/RunFolderName(identity) (run_identity.h): each data and config has
  // its own folder, so one checkpoint directory serves many runs without their meeting.
  bool run_folder = true;
  void Validate() const;  // bad input naming the option (callers check the config keys first)
};

struct LoadedCheckpoint {
  std::filesystem::path path;
  std::int64_t sequence = 0;
  int ranks_at_write = 0;
  std::string code_version;
  CheckpointRecord record;
};

class CheckpointStore {
 public:
  // Collective. Scans the run's folder (options.dir, or its run folder) for existing
  // checkpoints of this kind (numbering continues after the newest). Does not create the
  // directory until the first write.
  CheckpointStore(const Comm& comm, StoreOptions options, RunIdentity identity,
                  const Logger& logger);

  // Collective. Every rank passes a record with the same names; a dataset's values are
  // taken from its owner. Writes the next sequence number atomically, prunes to the
  // newest keep_last and returns the published path. Errors are agreed (kIo).
  std::filesystem::path Write(const CheckpointRecord& record);

  // Collective. Write, but an agreed failure of it is a warning (the previous checkpoint
  // stays the newest valid one) and nullopt, unless `fatal`, when it is thrown as by Write.
  // For the periodic checkpoints of a fit that is itself fine; a checkpoint that a stop
  // request or the end of a run depends on uses Write.
  std::optional<std::filesystem::path> TryWrite(const CheckpointRecord& record, bool fatal);
  int failed_writes() const { return failed_writes_; }

  // Collective. The newest checkpoint that opens, carries this kind, passes every checksum
  // and was written by this run's data and config; files that do not are skipped with a
  // warning naming them (and, for another run's file, the first key that differs). nullopt
  // if there is none: the run then starts afresh, never on another run's state.
  std::optional<LoadedCheckpoint> LoadNewest();

  // Checkpoint files of this kind in the directory, oldest first (rank 0's view,
  // broadcast).
  std::vector<std::filesystem::path> List() const;

  const StoreOptions& options() const { return options_; }
  // Seconds spent in Write so far (this rank), and the number of writes.
  double write_seconds() const { return write_seconds_; }
  int writes() const { return writes_; }

 private:
  const Comm& comm_;
  StoreOptions options_;
  RunIdentity identity_;
  const Logger& logger_;
  std::int64_t next_sequence_ = 1;
  double write_seconds_ = 0.0;
  int failed_writes_ = 0;
  int writes_ = 0;
};

// The sequence number in "<kind>_<sequence>.h5", or −1 if `name` is not such a file.
std::int64_t SequenceOf(const std::string& file_name, const std::string& kind);

}  // namespace homodyne::checkpoint
