// What to load from an XPCS HDF5 file: the plain options of the data loader.
//
// The config module fills this struct from the YAML file; the io module never parses
// YAML. Defaults follow homodyne (docs/data.md, spec §2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace homodyne::io {

// One phi_filtering target range, degrees; normalised to (-180, 180] before use. A
// range with min > max (after normalisation) wraps around ±180.
struct PhiRange {
  double min = -10.0;
  double max = 10.0;
};

struct PhiFilterOptions {
  bool enabled = false;
  std::vector<PhiRange> ranges;  // an angle is kept if it lies in ANY range
  // No angle in any range: fit them all with a warning (homodyne's default), or refuse the
  // data (phi_filtering.fallback_to_all_angles: false).
  bool fallback_to_all = true;
  // The config section that set these options, named in messages ("<key>.target_ranges");
  // empty when they did not come from a config file.
  std::string key;
};

struct LoadOptions {
  std::string path;                   // HDF5 file (aps_old or aps_u layout)
  double target_q = 0.0054;           // analyzer_parameters.scattering.wavevector_q [1/Å]
  double q_tolerance_fraction = 0.1;  // aps_old ring width, relative to the selected q
  std::int64_t start_frame = 1;       // 1-based; values < 1 are clamped to 1
  std::int64_t end_frame = -1;        // 1-based inclusive; negative = last frame
  double dt = 0.0;                    // frame spacing [s]; must be > 0
  PhiFilterOptions phi_filter;
  // The distributed loaders also read the first frame's row C[0, j] of every angle
  // (LocalData::first_row): two_component's quantile estimates pool the full matrix.
  bool first_row = false;

  // Safety limits checked before anything is allocated.
  std::int64_t max_frames = 100000;  // largest accepted matrix side in the file
  std::uint64_t max_bytes = 0;       // largest c2 buffer of one process; 0 = automatic
                                     // (min(64 GiB, 80% of physical memory))

  // Throws kBadInput (key named) if a value is out of range.
  void Validate() const;
};

}  // namespace homodyne::io
