// Two-time correlation data in memory, and loading it from an APS HDF5 file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "homodyne/export.h"

namespace homodyne {

// c2 of one q-ring: one N×N matrix per detector angle, frames dt apart.
struct XpcsData {
  std::string source;           // where the data came from (file name or label), for messages
  double q = 0.0;               // scattering wavevector [1/Å]
  double dt = 0.0;              // frame interval [s]
  std::vector<double> phi_deg;  // one angle per matrix [deg]
  // c2[k] is the full N×N matrix of angle k, row-major (c2[k][i·N + j] = c2(t_i, t_j)),
  // symmetric with a corrected diagonal, as LoadXpcsData returns it.
  std::vector<std::vector<double>> c2;
  HOMODYNE_API int n_frames() const;  // N, from the first matrix (0 without angles)
};

// The same data with the matrices held by the caller (a numpy array, a memory map, a
// buffer of another library): FitNlsq and FitCmc read them in place, without an owned copy.
// The matrices must stay alive and unchanged until the call returns.
struct XpcsDataView {
  std::string source;           // where the data came from, for messages
  double q = 0.0;               // scattering wavevector [1/Å]
  double dt = 0.0;              // frame interval [s]
  std::vector<double> phi_deg;  // one angle per matrix [deg]
  int n_frames = 0;             // N
  // c2[k] points to angle k's full N×N matrix, row-major (c2[k][i·N + j] = c2(t_i, t_j)),
  // laid out as XpcsData::c2[k]; not owned.
  std::vector<const double*> c2;
};

// A view of `data`'s matrices (which must outlive it).
HOMODYNE_API XpcsDataView ViewOf(const XpcsData& data);

// Which part of an APS file to load (the keys of the YAML config's analyzer_parameters,
// experimental_data and phi_filtering sections).
struct DataSelection {
  std::string file;                   // aps_old or aps_u layout, detected
  double q = 0.0054;                  // the q-ring nearest to this [1/Å]
  double q_tolerance_fraction = 0.1;  // aps_old ring width relative to q
  int start_frame = 1;                // 1-based
  int end_frame = -1;                 // 1-based inclusive; −1: the last frame
  double dt = 0.0;                    // frame interval [s], > 0
  // Angles kept: those inside any range (degrees, min > max wraps around ±180); empty: all.
  std::vector<std::pair<double, double>> phi_ranges;
};

// Reads the selected matrices of one file into memory (this process alone, no MPI).
// Each stored half matrix H becomes C = H + Hᵀ with the diagonal corrected as homodyne
// does. Errors name the file and dataset: homodyne::Error (kBadInput / kIo).
HOMODYNE_API XpcsData LoadXpcsData(const DataSelection& selection);

}  // namespace homodyne
