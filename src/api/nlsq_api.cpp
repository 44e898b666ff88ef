// homodyne/nlsq.h: the public options become the typed config the YAML reader also
// builds (config::Config, resolved by the same ResolveParameters), the in-memory data an
// io::Dataset, and the fit is the one `homodyne --config` runs (nlsq::RunNlsqFit).
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/config.h"
#include "config/config_reader.h"
#include "config/parameters.h"
#include "core/error.h"
#include "core/log.h"
#include "homodyne/nlsq.h"
#include "io/dataset.h"
#include "io/selection.h"
#include "model/analysis_mode.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne {
namespace {

const char* PerAngleModeName(PerAngleScaling s) {
  switch (s) {
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

void CheckData(const XpcsData& data) {
  const std::string& src = data.source;
  if (data.c2.empty()) ThrowBadInput("no angles", src, "c2");
  if (data.phi_deg.size() != data.c2.size()) {
    ThrowBadInput(fmt::format("{} angles for {} matrices", data.phi_deg.size(), data.c2.size()),
                  src, "phi_deg");
  }
  const auto n = static_cast<std::size_t>(data.n_frames());
  if (n < 3) ThrowBadInput(fmt::format("{} frame(s); a fit needs at least 3", n), src, "c2");
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    if (data.c2[k].size() != n * n) {
      ThrowBadInput(
          fmt::format("matrix {} has {} values, expected {} × {}", k, data.c2[k].size(), n, n), src,
          "c2");
    }
  }
  if (!(data.q > 0.0) || !std::isfinite(data.q)) {
    ThrowBadInput(fmt::format("expected a positive q, found {}", data.q), src, "q");
  }
  if (!(data.dt > 0.0) || !std::isfinite(data.dt)) {
    ThrowBadInput(fmt::format("expected a positive dt, found {}", data.dt), src, "dt");
  }
}

io::Dataset ToDataset(const XpcsData& data) {
  io::Dataset ds;
  io::DatasetMetadata& m = ds.meta;
  const auto n = static_cast<std::int64_t>(data.n_frames());
  m.file = data.source.empty() ? std::string("(in memory)") : data.source;
  for (std::size_t k = 0; k < data.c2.size(); ++k) {
    m.bins.push_back({static_cast<std::int64_t>(k), fmt::format("c2[{}]", k), data.q,
                      data.phi_deg[k], io::NormalizePhi(data.phi_deg[k])});
  }
  m.loader_bin_count = data.c2.size();
  m.q_physics = data.q;
  m.file_frames = n;
  m.n_frames = n;
  m.start_frame = 1;
  m.end_frame = n;
  m.dt = data.dt;
  m.t = io::LoaderTimeGrid(data.dt, n);
  ds.c2 = data.c2;
  return ds;
}

config::Config ToConfig(const NlsqOptions& o, const XpcsData& data, int n_angles) {
  config::Config c = config::DefaultConfig();
  c.source = "NlsqOptions";
  c.analysis_mode = o.mode;
  c.analysis_mode_name = std::string(model::ToString(o.mode));
  c.analyzer.dt = data.dt;
  c.analyzer.dt_source = "XpcsData::dt";
  c.analyzer.wavevector_q = data.q;
  c.analyzer.stator_rotor_gap = o.stator_rotor_gap;
  c.analyzer.stator_rotor_gap_source = "NlsqOptions::stator_rotor_gap";
  config::InitialParameters& ip = c.initial_parameters;
  std::vector<double> values;
  for (const ParameterSetting& s : o.parameters) {
    const std::string name = model::CanonicalParameterName(s.name);
    const bool scaling = name == "contrast" || name == "offset";
    if (s.min || s.max) {
      const auto def = config::DefaultParameterBounds(name);
      c.parameter_space.bounds.push_back(
          {name, s.min.value_or(def->min), s.max.value_or(def->max)});
    }
    if (!s.initial) continue;
    if (scaling) {
      (name == "contrast" ? ip.contrast : ip.offset) =
          std::vector<double>(static_cast<std::size_t>(n_angles), *s.initial);
    } else {
      ip.parameter_names.push_back(name);
      values.push_back(*s.initial);
    }
  }
  if (!values.empty()) ip.values = values;
  config::NlsqOptions& nlsq = c.optimization.nlsq;
  nlsq.max_iterations = o.max_iterations;
  nlsq.tolerance = o.ftol;
  nlsq.xtol = o.xtol;
  nlsq.gtol = o.gtol;
  nlsq.anti_degeneracy.per_angle_mode = PerAngleModeName(o.per_angle);
  config::ResolveParameters(c);
  return c;
}

ParameterEstimate Estimate(const std::string& name, double value, double uncertainty) {
  return {name, value, uncertainty};
}

}  // namespace

void NlsqOptions::Validate() const {
  const std::string src = "NlsqOptions";
  for (const ParameterSetting& s : parameters) {
    const std::string name = model::CanonicalParameterName(s.name);
    const std::string key = "parameters[" + s.name + "]";
    if (name != "contrast" && name != "offset" && model::PhysicalParameterIndex(mode, name) < 0) {
      ThrowBadInput(fmt::format("'{}' is not a parameter of {} (expected one of {}, contrast, "
                                "offset)",
                                s.name, model::ToString(mode),
                                fmt::join(model::PhysicalParameterNames(mode), ", ")),
                    src, key);
    }
    for (const auto& v : {s.initial, s.min, s.max}) {
      if (v && !std::isfinite(*v)) ThrowBadInput("values must be finite", src, key);
    }
    const auto def = config::DefaultParameterBounds(name);
    if (s.min.value_or(def->min) >= s.max.value_or(def->max)) {
      ThrowBadInput(fmt::format("min {} is not below max {}", s.min.value_or(def->min),
                                s.max.value_or(def->max)),
                    src, key);
    }
  }
  if (!(stator_rotor_gap > 0.0) || !std::isfinite(stator_rotor_gap)) {
    ThrowBadInput(fmt::format("expected a positive gap [Å], found {}", stator_rotor_gap), src,
                  "stator_rotor_gap");
  }
  if (max_iterations < 1) ThrowBadInput("must be at least 1", src, "max_iterations");
  for (const auto& [value, key] :
       {std::pair{ftol, "ftol"}, std::pair{xtol, "xtol"}, std::pair{gtol, "gtol"}}) {
    if (!(value >= 0.0) || !std::isfinite(value)) {
      ThrowBadInput(fmt::format("expected a finite value ≥ 0, found {}", value), src, key);
    }
  }
  if (threads < 1) ThrowBadInput("must be at least 1", src, "threads");
}

std::string_view ToString(NlsqStatus status) {
  switch (status) {
    case NlsqStatus::kConverged:
      return "converged";
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
  out += fmt::format("solver: {}\nper-angle scaling: {}\nquality: {}\n", solver_message,
                     per_angle_scaling, quality);
  for (const ParameterEstimate& p : physical) {
    out += fmt::format("  {:<20} {:>14.6g} ± {:.3g}\n", p.name, p.value, p.uncertainty);
  }
  for (std::size_t k = 0; k < phi_deg.size() && k < contrast.size() && k < offset.size(); ++k) {
    out += fmt::format("  phi {:>8.3f}: contrast {:.6g} ± {:.3g}, offset {:.6g} ± {:.3g}\n",
                       phi_deg[k], contrast[k].value, contrast[k].uncertainty, offset[k].value,
                       offset[k].uncertainty);
  }
  for (const std::string& w : warnings) out += "warning: " + w + "\n";
  return out;
}

NlsqSummary FitNlsq(MPI_Comm comm, const XpcsData& data, const NlsqOptions& options) {
  options.Validate();
  CheckData(data);
  const Comm c(comm);
  const io::Dataset dataset = ToDataset(data);
  const config::Config cfg = ToConfig(options, data, static_cast<int>(data.c2.size()));
  nlsq::NlsqRunOptions run;
  run.in_memory = &dataset;
  run.threads = options.threads;
  run.print_progress = options.print_progress;
  const Logger logger(c.rank(), options.print_progress ? LogLevel::kInfo : LogLevel::kError);
  const nlsq::NlsqRunResult r = nlsq::RunNlsqFit(c, cfg, run, logger);

  NlsqSummary s;
  const nlsq::FitReport& rep = r.report;
  s.status = rep.convergence_status == "converged"  ? NlsqStatus::kConverged
             : rep.convergence_status == "max_iter" ? NlsqStatus::kMaxIterations
                                                    : NlsqStatus::kFailed;
  s.solver_message = r.summary.message;
  s.iterations = rep.iterations;
  s.chi2 = rep.chi_squared;
  s.reduced_chi2 = rep.reduced_chi_squared;
  s.points = r.unique_pairs;
  for (std::size_t p = 0; p < rep.physical_names.size(); ++p) {
    s.physical.push_back(
        Estimate(rep.physical_names[p], rep.physical_values[p], rep.physical_uncertainties[p]));
  }
  s.phi_deg = rep.phi_deg;
  for (std::size_t k = 0; k < rep.contrast.size(); ++k) {
    s.contrast.push_back(
        Estimate(fmt::format("contrast_{}", k), rep.contrast[k], rep.contrast_uncertainty[k]));
    s.offset.push_back(
        Estimate(fmt::format("offset_{}", k), rep.offset[k], rep.offset_uncertainty[k]));
  }
  s.per_angle_scaling = rep.per_angle_mode;
  s.quality = rep.quality_flag;
  s.warnings = rep.quality_warnings;
  s.ranks = rep.mpi_ranks;
  s.threads_per_rank = rep.threads_per_rank;
  s.seconds = rep.execution_time;
  return s;
}

}  // namespace homodyne
