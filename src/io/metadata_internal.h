// Internal entry points shared by the serial and the distributed loader.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/dataset.h"

namespace homodyne::io {

DataFormat DetectFormat(hid_t file, const std::string& name);
DatasetMetadata ReadMetadataFromFile(hid_t file, const LoadOptions& options, const Logger& logger);

// Metadata <-> bytes (for MPI broadcast).
std::vector<char> EncodeMetadata(const DatasetMetadata& meta);
DatasetMetadata DecodeMetadata(std::span<const char> bytes);

}  // namespace homodyne::io
