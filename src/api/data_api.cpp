// homodyne/data.h on the serial loader of the io layer.
#include <cmath>

#include "core/log.h"
#include "homodyne/data.h"
#include "io/dataset.h"
#include "io/load_options.h"

namespace homodyne {

int XpcsData::n_frames() const {
  if (c2.empty()) return 0;
  return static_cast<int>(std::lround(std::sqrt(static_cast<double>(c2.front().size()))));
}

XpcsDataView ViewOf(const XpcsData& data) {
  XpcsDataView view;
  view.source = data.source;
  view.q = data.q;
  view.dt = data.dt;
  view.phi_deg = data.phi_deg;
  view.n_frames = data.n_frames();
  for (const std::vector<double>& m : data.c2) view.c2.push_back(m.data());
  return view;
}

XpcsData LoadXpcsData(const DataSelection& selection) {
  io::LoadOptions options;
  options.path = selection.file;
  options.target_q = selection.q;
  options.q_tolerance_fraction = selection.q_tolerance_fraction;
  options.start_frame = selection.start_frame;
  options.end_frame = selection.end_frame;
  options.dt = selection.dt;
  options.phi_filter.enabled = !selection.phi_ranges.empty();
  for (const auto& [lo, hi] : selection.phi_ranges) options.phi_filter.ranges.push_back({lo, hi});
  options.Validate();
  io::Dataset dataset = io::LoadDataset(options, Logger::Silent());
  XpcsData data;
  data.source = dataset.meta.file;
  data.q = dataset.meta.q_physics;
  data.dt = dataset.meta.dt;
  data.phi_deg = dataset.meta.phi_values();
  data.c2 = std::move(dataset.c2);
  return data;
}

}  // namespace homodyne
