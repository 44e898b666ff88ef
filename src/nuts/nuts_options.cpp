#include "nuts/nuts_options.h"

#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::nuts {

std::string_view ToString(MetricKind kind) { return kind == MetricKind::kDense ? "dense" : "diag"; }

bool MetricKindFromString(std::string_view text, MetricKind* kind) {
  if (text == "diag") {
    *kind = MetricKind::kDiag;
  } else if (text == "dense") {
    *kind = MetricKind::kDense;
  } else {
    return false;
  }
  return true;
}

namespace {

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

}  // namespace

bool NutsOptions::IsValid(std::string* error) const {
  if (num_warmup < 0) return Fail(error, fmt::format("num_warmup = {}: must be >= 0", num_warmup));
  if (num_samples < 1) {
    return Fail(error, fmt::format("num_samples = {}: must be >= 1", num_samples));
  }
  if (max_tree_depth < 1 || max_tree_depth > 30) {
    return Fail(error, fmt::format("max_tree_depth = {}: must be in [1, 30]", max_tree_depth));
  }
  if (!(target_accept > 0.0 && target_accept < 1.0)) {
    return Fail(error, fmt::format("target_accept = {}: must be in (0, 1)", target_accept));
  }
  if (metric != MetricKind::kDiag && metric != MetricKind::kDense) {
    return Fail(error, "metric: must be diag or dense");
  }
  if (!(std::isfinite(init_step_size) && init_step_size > 0.0)) {
    return Fail(error,
                fmt::format("init_step_size = {}: must be positive and finite", init_step_size));
  }
  if (!(jitter >= 0.0 && jitter < 1.0)) {
    return Fail(error, fmt::format("jitter = {}: must be in [0, 1)", jitter));
  }
  if (windows.init_buffer < 0 || windows.term_buffer < 0 || windows.base_window < 1) {
    return Fail(error, fmt::format("windows = ({}, {}, {}): buffers must be >= 0 and the base "
                                   "window >= 1",
                                   windows.init_buffer, windows.base_window, windows.term_buffer));
  }
  return true;
}

void NutsOptions::Validate() const {
  std::string error;
  if (!IsValid(&error)) ThrowBadInput("invalid NUTS options: " + error, {}, "nuts");
}

}  // namespace homodyne::nuts
