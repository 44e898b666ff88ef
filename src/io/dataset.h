// Loading XPCS two-time correlation data from APS HDF5 files (serial path).
//
// Two layouts are detected automatically (aps_u first, then aps_old; docs/data.md):
//   aps_u   /xpcs/qmap/dynamic_v_list_dim0, /xpcs/qmap/dynamic_v_list_dim1,
//           /xpcs/twotime/processed_bins, /xpcs/twotime/correlation_map/<keys>
//   aps_old /xpcs/dqlist, /xpcs/dphilist, /exchange/C2T_all/<keys>
// Each stored matrix is a half matrix H; the loader reconstructs C = H + Hᵀ with the
// diagonal halved, slices frames, and applies the basic diagonal correction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "io/load_options.h"

namespace homodyne::io {

enum class DataFormat { kApsOld, kApsU };
std::string_view ToString(DataFormat format);

// One kept (q, phi) bin.
struct SelectedBin {
  std::int64_t bin = 0;  // aps_old: 0-based index into dqlist; aps_u: the processed_bins id
  std::string dataset;   // full path of its matrix in the file
  double q = 0.0;        // [1/Å]
  double phi_raw = 0.0;  // [deg] as stored
  double phi = 0.0;      // [deg] normalised to (-180, 180]
};

// Everything about a selection except the matrices; small, broadcast to all ranks.
struct DatasetMetadata {
  std::string file;
  DataFormat format = DataFormat::kApsOld;
  std::vector<SelectedBin> bins;     // kept bins after q selection AND phi filtering, kept order
  std::size_t loader_bin_count = 0;  // bins selected by q before phi filtering
  double q_physics = 0.0;        // q of the first q-selected bin (homodyne wavevector_q_list[0])
  std::int64_t file_frames = 0;  // side F of the stored matrices
  std::int64_t frame_begin = 0;  // 0-based first frame of the slice
  std::int64_t n_frames = 0;     // N = frames after slicing
  std::int64_t start_frame = 1;  // resolved, 1-based
  std::int64_t end_frame = 0;    // resolved, 1-based inclusive
  double dt = 0.0;
  std::vector<double> t;  // loader grid, length N, from 0 (numpy linspace)

  std::size_t n_angles() const { return bins.size(); }
  std::vector<double> q_values() const;
  std::vector<double> phi_values() const;  // normalised
};

// Serial result: one full N×N row-major matrix per kept angle, diagonal-corrected.
struct Dataset {
  DatasetMetadata meta;
  std::vector<std::vector<double>> c2;
  double at(std::size_t angle, std::int64_t i, std::int64_t j) const {
    return c2[angle][static_cast<std::size_t>(i * meta.n_frames + j)];
  }
};

// What a Dataset holds, with the matrices owned by the caller (the public API's data in
// memory, which may be a numpy buffer: fitted without a copy of them). The matrices must
// outlive the view.
struct DatasetView {
  DatasetMetadata meta;
  std::vector<const double*> c2;  // c2[k]: angle k's N×N row-major matrix, as Dataset::c2[k]
};

// A view of a loaded Dataset (which must outlive it).
DatasetView ViewOf(const Dataset& data);

// Opens the file, detects the layout, applies the q/phi/frame selection and validates
// shapes and sizes. Reads no matrix data. Throws kBadInput naming file and dataset.
DatasetMetadata ReadDatasetMetadata(const LoadOptions& options, const Logger& logger);

// ReadDatasetMetadata + the matrices (frame slice only), reconstructed, checked for
// NaN/Inf and diagonal-corrected.
Dataset LoadDataset(const LoadOptions& options, const Logger& logger);

// The kept matrix of one angle (index into meta.bins) as LoadDataset gives it, into `matrix`:
// N×N, reconstructed, checked for NaN/Inf and diagonal-corrected; reads meta.file, whose
// metadata `meta` must be (ReadDatasetMetadata), through `buffer` (the stored N×N matrix).
// Both keep their memory from one call to the next (fresh pages cost more than the read
// itself on a virtual machine).
void LoadAngleMatrixInto(const DatasetMetadata& meta, std::size_t angle,
                         std::vector<double>& buffer, std::vector<double>& matrix);

// Largest c2 buffer one process may allocate (options.max_bytes or the automatic limit).
std::uint64_t MaxLoadBytes(const LoadOptions& options);

}  // namespace homodyne::io
