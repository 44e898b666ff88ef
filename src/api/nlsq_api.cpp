// homodyne/nlsq.h: the public options become the typed config the YAML reader also
// builds (config::Config, resolved by the same ResolveParameters), the in-memory data an
// io::DatasetView (no copy of the matrices), and the fit is the one `homodyne --config` runs
// (global::RunNlsqPipeline).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/config.h"
#include "config/config_reader.h"
#include "config/parameters.h"
#include "core/errors.h"
#include "core/log.h"
#include "global/fit_pipeline.h"
#include "homodyne/nlsq.h"
#include "io/dataset.h"
#include "io/selection.h"
#include "model/analysis_mode.h"
#include "model/parameter_layout.h"
#include "parallel/comm.h"
#include "translate.h"

namespace homodyne {
namespace {

config::Config ToConfig(const NlsqOptions& o, const XpcsDataView& data) {
  config::Config c = config::DefaultConfig();
  api::ApplyModelSettings(c, o.mode, o.stator_rotor_gap, o.parameters, data, "NlsqOptions");
  config::NlsqOptions& nlsq = c.optimization.nlsq;
  nlsq.max_iterations = o.max_iterations;
  nlsq.tolerance = o.ftol;
  nlsq.xtol = o.xtol;
  nlsq.gtol = o.gtol;
  nlsq.anti_degeneracy.per_angle_mode = api::ToPerAngleMode(o.per_angle);
  nlsq.recovery.on_stall =
      o.restarts_on_stall ? config::StallRecovery::kRestarts : config::StallRecovery::kNone;
  nlsq.recovery.phi0_restarts = o.phi0_restarts;
  config::ResolveParameters(c);
  return c;
}
}  // namespace

void NlsqOptions::Validate() const {
  const std::string src = "NlsqOptions";
  api::ValidateParameterSettings(mode, parameters, src);
  if (!(stator_rotor_gap > 0.0) || !std::isfinite(stator_rotor_gap)) {
    ThrowBadInput(fmt::format("expected a positive gap [Å], found {}", stator_rotor_gap), src,
                  "stator_rotor_gap");
  }
  if (max_iterations < 1) ThrowBadInput("must be at least 1", src, "max_iterations");
  if (phi0_restarts < 0 || phi0_restarts > 1000) {
    ThrowBadInput(fmt::format("expected 0 to 1000 restarts, found {}", phi0_restarts), src,
                  "phi0_restarts");
  }
  for (const auto& [value, key] :
       {std::pair{ftol, "ftol"}, std::pair{xtol, "xtol"}, std::pair{gtol, "gtol"}}) {
    if (!(value >= 0.0) || !std::isfinite(value)) {
      ThrowBadInput(fmt::format("expected a finite value ≥ 0, found {}", value), src, key);
    }
  }
  if (threads < 1) ThrowBadInput("must be at least 1", src, "threads");
}

std::string_view ToString(PerAngleScaling scaling) {
  switch (scaling) {
    case PerAngleScaling::kIndividual:
      return "individual";
    case PerAngleScaling::kConstant:
      return "constant";
    case PerAngleScaling::kFourier:
      return "fourier";
    case PerAngleScaling::kAuto:
      break;
  }
  return "auto";
}

// The spellings the result files carry.
std::string_view ToString(ScalingLayout layout) {
  return model::ToString(api::ToModelLayout(layout));
}

std::string_view ToString(FitQuality quality) {
  switch (quality) {
    case FitQuality::kGood:
      return "good";
    case FitQuality::kAcceptable:
      return "acceptable";
    case FitQuality::kPoor:
      return "poor";
    case FitQuality::kNotAssessed:
      break;
  }
  return "not_assessed";
}

std::string_view ToString(NlsqStatus status) {
  switch (status) {
    case NlsqStatus::kConverged:
      return "converged";
    case NlsqStatus::kStalled:
      return "stalled";
    case NlsqStatus::kMaxIterations:
      return "max_iter";
    case NlsqStatus::kFailed:
      break;
  }
  return "failed";
}

std::string NlsqSummary::BriefReport() const {
  return fmt::format(
      "NLSQ {}: {} iteration(s), chi2 {:.6e}, reduced chi2 {:.5g}, {} points, "
      "{:.2f} s on {} rank(s) x {} thread(s)\n",
      ToString(status), iterations, chi2, reduced_chi2, points, seconds, ranks, threads_per_rank);
}

std::string NlsqSummary::FullReport() const {
  std::string out = BriefReport();
  out += fmt::format(
      "solver: {}\nper-angle scaling: {}\nquality: {} (reduced chi2 {:.5g} in units of "
      "the data's noise)\n",
      solver_message, ToString(per_angle_scaling), ToString(quality), noise_reduced_chi2);
  for (const std::string& why : misfit_reasons) out += fmt::format("misfit: {}\n", why);
  for (const ParameterEstimate& p : physical) {
    out += p.held ? fmt::format("  {:<20} {:>14.6g}   (held, not fitted)\n", p.name, p.value)
                  : fmt::format("  {:<20} {:>14.6g} ± {:.3g}\n", p.name, p.value, p.uncertainty);
  }
  for (std::size_t k = 0; k < phi_deg.size() && k < contrast.size() && k < offset.size(); ++k) {
    out += fmt::format("  phi {:>8.3f}: contrast {:.6g} ± {:.3g}, offset {:.6g} ± {:.3g}\n",
                       phi_deg[k], contrast[k].value, contrast[k].uncertainty, offset[k].value,
                       offset[k].uncertainty);
  }
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  for (const std::string& a : recovery_actions) out += "recovery: " + a + "\n";
  return out;
}

NlsqSummary FitNlsq(MPI_Comm comm, const XpcsData& data, const NlsqOptions& options) {
  options.Validate();
  api::CheckData(data);
  return FitNlsq(comm, ViewOf(data), options);
}

NlsqSummary FitNlsq(MPI_Comm comm, const XpcsDataView& data, const NlsqOptions& options) {
  options.Validate();
  api::CheckData(data);
  const Comm c(comm);
  const io::DatasetView dataset = api::ToDatasetView(data);
  const config::Config cfg = ToConfig(options, data);
  nlsq::NlsqRunOptions run;
  run.in_memory = &dataset;
  run.threads = options.threads;
  run.print_progress = options.print_progress;
  if (options.stop_on_request) run.checkpoints = api::StopSettings(c, cfg, options.stop_directory);
  const Logger logger(c.rank(), options.print_progress ? LogLevel::kInfo : LogLevel::kError);
  const nlsq::NlsqRunResult r = global::RunNlsqPipeline(c, cfg, run, logger);

  return api::ToNlsqSummary(r);
}

}  // namespace homodyne
