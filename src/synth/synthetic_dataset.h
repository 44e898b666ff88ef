// Synthetic XPCS datasets from the homodyne model, in either APS layout.
//
// The matrices are the exact model (std::sin/std::cos, bit-identical to the reference
// implementation) on the loader grid t = dt·[0, 1, …, N−1] — the grid the loader will
// reconstruct — optionally with symmetric Gaussian noise from a counter-based stream
// keyed by (seed, angle). The true parameters are stored as attributes of
// /homodyne_synth so tests and users can compare fits with the truth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "model/analysis_mode.h"
#include "model/geometry.h"

namespace homodyne::synth {

struct SynthOptions {
  std::string output;              // file to write (refused if it exists, unless force)
  std::string format = "aps_old";  // aps_old | aps_u
  bool lzf = false;                // aps_u: LZF-compress the matrices (filter 32000)
  int frames = 0;                  // ≤ 0: from the config (end_frame) or 200
  std::vector<double> phi_deg = {0.0, 45.0, 90.0};
  std::map<std::string, double> params;  // physical overrides (aliases accepted)
  std::optional<double> contrast;        // all angles (default: config contrast initial)
  std::optional<double> offset;          // all angles (default: config offset initial)
  double noise = 0.0;                    // Gaussian σ added to every matrix element
  std::uint64_t seed = 0;
  bool force = false;  // overwrite an existing output file
  int threads = 1;

  void Validate() const;  // bad-input Error naming the option
};

// What was written: the truth of the dataset.
struct SynthTruth {
  model::AnalysisMode mode = model::AnalysisMode::kStatic;
  model::Geometry geometry;
  std::vector<std::string> physical_names;
  std::vector<double> physical;
  std::vector<double> phi_deg;
  std::vector<double> contrast, offset;  // per angle
  int frames = 0;
  double noise = 0.0;
  std::uint64_t seed = 0;
  std::string format;
};

// The full symmetric model matrices (angles × frames × frames, row-major) on the loader
// grid, no noise. `exact`: the literal model's transcendentals (the truth of a synthetic
// dataset, bit for bit); else the fit kernel's fast ones (within 1e-13 relative of them,
// five times faster).
std::vector<std::vector<double>> ModelMatrices(const SynthTruth& truth, int threads = 1,
                                               bool exact = true);
// The same for a truth of one angle, into `matrix` (resized to frames × frames), with
// `scratch` for the upper triangle's values: both keep their storage from call to call.
void ModelMatrixInto(const SynthTruth& truth, bool exact, std::vector<double>& scratch,
                     std::vector<double>& matrix);

// Resolves the truth from the config and options, evaluates, adds noise, writes the file.
SynthTruth WriteSyntheticDataset(const config::Config& cfg, const SynthOptions& options);

// Reads the truth back from a file's /homodyne_synth attributes.
SynthTruth ReadSyntheticTruth(const std::string& path);

}  // namespace homodyne::synth
