// What a checkpoint must match to be resumed: the effective config and the input data
// selection, each as a canonical text ("key: value" lines; the config's comes from
// config::DescribeConfig) and its 64-bit FNV-1a hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace homodyne::checkpoint {

struct RunIdentity {
  std::string config_description;  // canonical "key: value" lines
  std::string data_description;
  std::string config_hash() const;  // 16 hex digits
  std::string data_hash() const;
};

// FNV-1a 64 (core/fnv1a.h) of `text` as 16 hex digits.
std::string HashText(const std::string& text);

// The data a run fits: the digest of its values (io/content_digest.h; not the file's path,
// size or modification time, which copies of other data can share) and the selected q,
// angles, frame count, dt and points.
std::string DescribeData(const std::string& content_digest, double q,
                         const std::vector<double>& phi_deg, std::int64_t n_frames, double dt,
                         std::int64_t points);

// The folder of a run's checkpoints inside a checkpoint directory: one per data and config,
// so that runs of one template over several datasets, or with changed settings, never meet
// each other's files ("<data hash>-<config hash>", 8 hex digits each).
std::string RunFolderName(const RunIdentity& identity);

// The first line that differs between two descriptions, "expected … found …" style
// ("" if equal).
std::string FirstDifference(const std::string& checkpoint, const std::string& current);

}  // namespace homodyne::checkpoint
