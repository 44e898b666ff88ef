// Atomic publication of output files: a reader (or a crash) never sees a half-written
// file. Content goes to "<name>.tmp.<pid>" in the same directory, is fsync'ed, renamed
// over the final name (atomic within one file system), and the directory is fsync'ed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace homodyne {

// Writes `content` to `path` atomically. Throws an I/O Error naming the path.
void WriteFileAtomically(const std::filesystem::path& path, std::string_view content);

// The temporary name used for `path` by this process.
std::filesystem::path TemporaryPathFor(const std::filesystem::path& path);

// fsync(tmp), rename(tmp → path), fsync(directory). For files written by other means
// (e.g. HDF5) into TemporaryPathFor(path).
void PublishAtomically(const std::filesystem::path& tmp, const std::filesystem::path& path);

// Creates `dir` and its parents if needed; an I/O Error names the directory.
void EnsureDirectory(const std::filesystem::path& dir);

}  // namespace homodyne
