// While a ReadCrashGuard is alive, a crash of this process (SIGSEGV, SIGBUS) ends it with exit
// status 2 and an error that names the file being read, instead of a bare signal and status
// 139. For libhdf5 1.10.8, which on some corrupt files dereferences NULL inside the library
// (fuzz/known_hdf5_crashes/), where no error can be returned: the file is bad input, and the
// user is told which one. Output files are written atomically (and the fit's results only
// after the data are read), so nothing is left half-written; under mpiexec the other ranks
// are ended as for any failed rank.
//
// Scope it to the reading only (not to computations done while a file is open), on the
// thread that reads. Guards nest (the innermost names the file). In sanitizer builds it does
// nothing, so that the sanitizers and fuzzers still see and report the crash.
#pragma once

#include <string_view>

namespace homodyne::io {

class ReadCrashGuard {
 public:
  // file: the path in the message; what: what was being read ("the metadata", …).
  ReadCrashGuard(std::string_view file, std::string_view what);
  ~ReadCrashGuard();
  ReadCrashGuard(const ReadCrashGuard&) = delete;
  ReadCrashGuard& operator=(const ReadCrashGuard&) = delete;

 private:
  static constexpr int kMessageBytes = 1024;
  char previous_[kMessageBytes];  // the enclosing guard's message
  int previous_length_ = 0;
};

}  // namespace homodyne::io
