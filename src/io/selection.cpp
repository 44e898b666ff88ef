#include "io/selection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/errors.h"

namespace homodyne::io {

namespace {

std::string RangesKey(const std::string& section) {
  return section.empty() ? std::string("target_ranges") : section + ".target_ranges";
}

}  // namespace

void LoadOptions::Validate() const {
  if (path.empty())
    ThrowBadInput("no data file given (expected a path to an HDF5 file)", "", "path");
  if (!std::isfinite(dt) || dt <= 0.0) {
    ThrowBadInput(fmt::format("expected a finite frame spacing dt > 0, got {}", dt), path, "dt");
  }
  if (!std::isfinite(target_q) || target_q <= 0.0) {
    ThrowBadInput(fmt::format("expected a finite wavevector_q > 0, got {}", target_q), path,
                  "wavevector_q");
  }
  if (!std::isfinite(q_tolerance_fraction) || q_tolerance_fraction < 0.0) {
    ThrowBadInput(fmt::format("expected q_tolerance_fraction >= 0, got {}", q_tolerance_fraction),
                  path, "q_tolerance_fraction");
  }
  if (max_frames < 1) {
    ThrowBadInput(fmt::format("expected max_frames >= 1, got {}", max_frames), path, "max_frames");
  }
  for (const PhiRange& r : phi_filter.ranges) {
    if (!std::isfinite(r.min) || !std::isfinite(r.max)) {
      ThrowBadInput("phi_filtering range ends must be finite", path, RangesKey(phi_filter.key));
    }
  }
}

std::vector<std::size_t> SelectApsOldBins(std::span<const double> dqlist, double target_q,
                                          double tolerance_fraction) {
  const std::size_t m = dqlist.size();
  if (m == 0) return {};
  std::size_t closest = 0;
  for (std::size_t i = 1; i < m; ++i) {
    if (std::abs(dqlist[i] - target_q) < std::abs(dqlist[closest] - target_q)) closest = i;
  }
  const double q_sel = dqlist[closest];
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < m; ++i) {
    if (std::abs(dqlist[i] - q_sel) <= tolerance_fraction * q_sel) kept.push_back(i);
  }
  if (kept.size() >= 5) return kept;
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(dqlist[a] - q_sel) < std::abs(dqlist[b] - q_sel);
  });
  order.resize(std::min<std::size_t>(10, m));
  return order;
}

std::vector<std::size_t> SelectApsUPairs(std::span<const double> pair_q, double target_q) {
  if (pair_q.empty()) return {};
  std::size_t closest = 0;
  for (std::size_t i = 1; i < pair_q.size(); ++i) {
    if (std::abs(pair_q[i] - target_q) < std::abs(pair_q[closest] - target_q)) closest = i;
  }
  const double q_sel = pair_q[closest];
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < pair_q.size(); ++i) {
    if (std::abs(pair_q[i] - q_sel) < 1e-10) kept.push_back(i);
  }
  if (kept.empty()) kept.push_back(0);  // homodyne: "if nothing remains the first pair is used"
  return kept;
}

double NormalizePhi(double phi_degrees) {
  double r = std::fmod(phi_degrees, 360.0);
  if (r != 0.0 && r < 0.0) r += 360.0;  // floor-mod like numpy (result in [0, 360])
  if (r == 0.0) r = 0.0;                // drop a negative zero
  if (r > 180.0) r -= 360.0;
  return r;
}

bool PhiInRange(double phi_normalized, const PhiRange& range) {
  const double lo = NormalizePhi(range.min);
  const double hi = NormalizePhi(range.max);
  if (lo <= hi) return lo <= phi_normalized && phi_normalized <= hi;
  return phi_normalized >= lo || phi_normalized <= hi;
}

std::vector<std::size_t> FilterPhi(std::span<const double> phi_normalized,
                                   const PhiFilterOptions& filter, const Logger& logger) {
  std::vector<std::size_t> all(phi_normalized.size());
  std::iota(all.begin(), all.end(), 0);
  if (!filter.enabled || filter.ranges.empty()) return all;
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < phi_normalized.size(); ++i) {
    const bool match =
        std::any_of(filter.ranges.begin(), filter.ranges.end(),
                    [&](const PhiRange& r) { return PhiInRange(phi_normalized[i], r); });
    if (match) kept.push_back(i);
  }
  if (kept.empty() && !filter.fallback_to_all) {
    ThrowBadInput(fmt::format("no angle of the file ({} of them) lies in the target ranges, and "
                              "fallback_to_all_angles is false",
                              phi_normalized.size()),
                  "", RangesKey(filter.key));
  }
  if (kept.empty()) {
    logger.Warn("phi_filtering: no angle lies in the target ranges; keeping all {} angles",
                phi_normalized.size());
    return all;
  }
  if (kept.size() < phi_normalized.size()) {
    std::vector<double> dropped;
    for (std::size_t i = 0, j = 0; i < phi_normalized.size(); ++i) {
      if (j < kept.size() && kept[j] == i) {
        ++j;
      } else {
        dropped.push_back(phi_normalized[i]);
      }
    }
    logger.Warn(
        "phi_filtering kept {} of {} angles; dropped {:.4g} deg (outside {}: widen the ranges or "
        "set {}: false to fit them)",
        kept.size(), phi_normalized.size(), fmt::join(dropped, ", "), RangesKey(filter.key),
        filter.key.empty() ? std::string("enabled") : filter.key + ".enabled");
  }
  return kept;
}

FrameRange ResolveFrames(std::int64_t start_frame, std::int64_t end_frame, std::int64_t frames,
                         const std::string& file) {
  FrameRange r;
  r.start_frame = std::max<std::int64_t>(start_frame, 1);
  r.end_frame = end_frame < 0 ? frames : std::min(end_frame, frames);
  if (r.end_frame < r.start_frame) {
    ThrowBadInput(fmt::format("end_frame ({}) is before start_frame ({}) after resolving against "
                              "the {} frames in the file (requested start_frame={}, "
                              "end_frame={}); expected start_frame <= end_frame",
                              r.end_frame, r.start_frame, frames, start_frame, end_frame),
                  file, "end_frame");
  }
  r.begin = r.start_frame - 1;
  r.count = r.end_frame - r.start_frame + 1;
  return r;
}

std::vector<double> LoaderTimeGrid(double dt, std::int64_t n) {
  if (n <= 0) return {};
  std::vector<double> t(static_cast<std::size_t>(n), 0.0);
  if (n == 1) return t;
  const double stop = dt * static_cast<double>(n - 1);
  const double step = stop / static_cast<double>(n - 1);
  for (std::int64_t i = 0; i < n; ++i)
    t[static_cast<std::size_t>(i)] = static_cast<double>(i) * step;
  t.back() = stop;
  return t;
}

std::vector<double> CorrectedDiagonal(std::span<const double> super_diagonal,
                                      std::span<const double> sub_diagonal) {
  const std::size_t m = super_diagonal.size();  // n - 1
  std::vector<double> sb(m);
  for (std::size_t k = 0; k < m; ++k) sb[k] = 0.5 * (super_diagonal[k] + sub_diagonal[k]);
  std::vector<double> diag(m + 1);
  if (m == 0) return diag;
  diag[0] = sb[0];
  diag[m] = sb[m - 1];
  for (std::size_t k = 1; k < m; ++k) diag[k] = 0.5 * (sb[k - 1] + sb[k]);
  return diag;
}

void ApplyBasicDiagonalCorrection(std::span<double> matrix, std::int64_t n) {
  if (n <= 1) return;
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> sup(un - 1);
  std::vector<double> sub(un - 1);
  for (std::size_t k = 0; k + 1 < un; ++k) {
    sup[k] = matrix[k * un + k + 1];
    sub[k] = matrix[(k + 1) * un + k];
  }
  const std::vector<double> diag = CorrectedDiagonal(sup, sub);
  for (std::size_t k = 0; k < un; ++k) matrix[k * un + k] = diag[k];
}

}  // namespace homodyne::io
