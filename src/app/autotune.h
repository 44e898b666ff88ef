// Autotune: time the model kernel over threads per rank and chunk sizes on this machine
// and cache the best settings per hardware signature, so that `homodyne` can pick its
// thread count without --threads.
//
// Cache: $XDG_CACHE_HOME/homodyne/tune-<signature>.json (default ~/.cache/homodyne/...).
// The signature hashes the CPU model, core/PU/package counts, cache sizes, the NUMA layout
// and the library versions (homodyne, MPI, PETSc, HDF5, hwloc, compiler, build type), so a
// different machine or build never reads another's settings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/library_versions.h"
#include "core/topology.h"
#include "core/topology_report.h"

namespace homodyne {

// The canonical text the signature hashes (one "key=value" per line, fixed order).
std::string HardwareSignatureText(const TopologyDescription& d, const LibraryVersions& v);
// 16 hex digits: 64-bit FNV-1a of HardwareSignatureText.
std::string HardwareSignature(const TopologyDescription& d, const LibraryVersions& v);

// $XDG_CACHE_HOME/homodyne (if set and absolute), else $HOME/.cache/homodyne.
std::filesystem::path TuneCacheDirectory();
std::filesystem::path TuneCachePath(const std::string& signature);

struct TuneTiming {
  int threads = 1;
  std::int64_t chunk_points = 0;
  double seconds_per_pass = 0.0;  // median of χ² + normal-equation pass pairs
};

struct TuneSettings {
  std::string signature;
  std::string signature_text;
  int threads_per_rank = 1;
  std::int64_t chunk_points = 16384;
  double points_per_second = 0.0;  // of the best setting (χ² + normal equations per point)
  std::string created;             // ISO-8601 UTC
  std::vector<TuneTiming> timings;
};

std::string TuneSettingsToJson(const TuneSettings& s);
// Bad-input Error naming the file when the JSON is malformed or incomplete.
TuneSettings TuneSettingsFromJson(const std::string& text, const std::string& file);

// Writes atomically, creating the directory.
void WriteTuneCache(const std::filesystem::path& path, const TuneSettings& s);
// nullopt when the file is absent; the settings only if their signature is `signature`
// (otherwise nullopt and `why` says so). A malformed file is an Error.
std::optional<TuneSettings> ReadTuneCache(const std::filesystem::path& path,
                                          const std::string& signature, std::string* why = nullptr);

struct AutotuneOptions {
  int frames = 400;  // synthetic laminar_flow problem: frames × angles
  int angles = 23;
  int repeats = 5;  // timed pass pairs per setting (median)
  std::vector<std::int64_t> chunk_points = {4096, 16384, 65536};
  int max_threads = 0;  // ≤ 0: the cores of the process cpuset
};

// Times the kernel (pinned as homodyne pins it) for threads 1..max and every chunk size.
// `progress` (may be null) receives one line per setting.
TuneSettings RunAutotune(const Topology& topology, const AutotuneOptions& options,
                         const std::function<void(const std::string&)>& progress = {});

}  // namespace homodyne
