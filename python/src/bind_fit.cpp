// Fits: NLSQ and CMC on arrays (homodyne/nlsq.h, cmc.h) and on a config
// (homodyne/config_fit.h), collective over an MPI communicator, with the GIL released and
// SIGINT turned into a stop request. Results as dicts (homodyne_hpc/results.py types them).
#include <cmath>

#include "common.h"

namespace homodyne::python {
namespace {

PerAngleScaling ParsePerAngle(const std::string& text) {
  for (const PerAngleScaling s : {PerAngleScaling::kAuto, PerAngleScaling::kIndividual,
                                  PerAngleScaling::kConstant, PerAngleScaling::kFourier}) {
    if (ToString(s) == text) return s;
  }
  throw py::value_error(
      "per_angle: expected 'auto', 'individual', 'constant' or 'fourier', found '" + text + "'");
}

AnalysisMode ParseMode(const std::string& mode) {
  for (const AnalysisMode m :
       {AnalysisMode::kStatic, AnalysisMode::kLaminarFlow, AnalysisMode::kTwoComponent}) {
    if (AnalysisModeName(m) == mode) return m;
  }
  throw py::value_error("mode: expected 'static', 'laminar_flow' or 'two_component', found '" +
                        mode + "'");
}

// {name: {"initial": x, "min": a, "max": b, "fixed": bool}} (a number alone: the initial).
std::vector<ParameterSetting> ParseParameters(const py::dict& given) {
  std::vector<ParameterSetting> out;
  for (const auto& [key, value] : given) {
    ParameterSetting s;
    s.name = py::str(key);
    if (py::isinstance<py::dict>(value)) {
      const auto d = value.cast<py::dict>();
      for (const auto& [k, v] : d) {
        const std::string field = py::str(k);
        if (field == "initial" || field == "value") {
          s.initial = v.cast<double>();
        } else if (field == "min") {
          s.min = v.cast<double>();
        } else if (field == "max") {
          s.max = v.cast<double>();
        } else if (field == "fixed") {
          s.fixed = v.cast<bool>();
        } else {
          throw py::value_error("parameters['" + s.name + "']: unknown field '" + field +
                                "' (initial, min, max, fixed)");
        }
      }
    } else {
      s.initial = value.cast<double>();
    }
    out.push_back(s);
  }
  return out;
}

// The options dict's keys are the fields of NlsqOptions / CmcOptions; an unknown key is an
// error naming it.
template <typename Options>
void ApplyCommon(Options& o, const std::string& key, const py::handle& v) {
  if (key == "mode") {
    o.mode = ParseMode(v.cast<std::string>());
  } else if (key == "stator_rotor_gap") {
    o.stator_rotor_gap = v.cast<double>();
  } else if (key == "parameters") {
    o.parameters = ParseParameters(v.cast<py::dict>());
  } else if (key == "per_angle") {
    o.per_angle = ParsePerAngle(v.cast<std::string>());
  } else if (key == "threads") {
    o.threads = v.cast<int>();
  } else if (key == "print_progress") {
    o.print_progress = v.cast<bool>();
  } else if (key == "stop_directory") {
    o.stop_directory = v.cast<std::string>();
  } else {
    throw py::value_error("unknown option '" + key + "'");
  }
}

NlsqOptions ParseNlsqOptions(const py::dict& d) {
  NlsqOptions o;
  for (const auto& [k, v] : d) {
    const std::string key = py::str(k);
    if (key == "max_iterations") {
      o.max_iterations = v.cast<int>();
    } else if (key == "ftol") {
      o.ftol = v.cast<double>();
    } else if (key == "xtol") {
      o.xtol = v.cast<double>();
    } else if (key == "gtol") {
      o.gtol = v.cast<double>();
    } else if (key == "restarts_on_stall") {
      o.restarts_on_stall = v.cast<bool>();
    } else if (key == "phi0_restarts") {
      o.phi0_restarts = v.cast<int>();
    } else {
      ApplyCommon(o, key, v);
    }
  }
  return o;
}

py::dict EstimateDict(const ParameterEstimate& p) {
  py::dict d;
  d["value"] = p.value;
  d["uncertainty"] = p.uncertainty;
  d["held"] = p.held;
  return d;
}

// d[name] and d[name + "_uncertainty"]: the estimates' values and uncertainties, per angle.
void AddColumns(py::dict& d, const std::string& name, const std::vector<ParameterEstimate>& es) {
  std::vector<double> values, uncertainties;
  for (const ParameterEstimate& p : es) {
    values.push_back(p.value);
    uncertainties.push_back(p.uncertainty);
  }
  d[py::str(name)] = values;
  d[py::str(name + "_uncertainty")] = uncertainties;
}

py::dict NlsqDict(const NlsqSummary& s) {
  py::dict d;
  d["method"] = "nlsq";
  d["status"] = std::string(ToString(s.status));
  d["solver_message"] = s.solver_message;
  d["iterations"] = s.iterations;
  d["chi2"] = s.chi2;
  d["reduced_chi2"] = s.reduced_chi2;
  d["noise_reduced_chi2"] = s.noise_reduced_chi2;
  d["misfit_reasons"] = s.misfit_reasons;
  d["points"] = s.points;
  py::dict physical;
  for (const ParameterEstimate& p : s.physical) physical[py::str(p.name)] = EstimateDict(p);
  d["parameters"] = physical;
  d["phi_deg"] = s.phi_deg;
  AddColumns(d, "contrast", s.contrast);
  AddColumns(d, "offset", s.offset);
  d["per_angle_scaling"] = std::string(ToString(s.per_angle_scaling));
  d["quality"] = std::string(ToString(s.quality));
  d["warnings"] = s.warnings;
  d["recovery_actions"] = s.recovery_actions;
  d["ranks"] = s.ranks;
  d["threads_per_rank"] = s.threads_per_rank;
  d["seconds"] = s.seconds;
  d["report"] = s.FullReport();
  return d;
}

CmcOptions ParseCmcOptions(const py::dict& d) {
  CmcOptions o;
  for (const auto& [k, v] : d) {
    const std::string key = py::str(k);
    if (key == "shards") {
      o.shards = v.cast<int>();
    } else if (key == "chains") {
      o.chains = v.cast<int>();
    } else if (key == "warmup") {
      o.warmup = v.cast<int>();
    } else if (key == "draws") {
      o.draws = v.cast<int>();
    } else if (key == "seed") {
      o.seed = v.cast<long long>();
    } else if (key == "target_accept") {
      o.target_accept = v.cast<double>();
    } else if (key == "max_tree_depth") {
      o.max_tree_depth = v.cast<int>();
    } else if (key == "known_sigma") {
      if (!v.is_none()) o.known_sigma = v.cast<double>();
    } else if (key == "nlsq_informed_priors") {
      if (!v.is_none()) o.nlsq_informed_priors = v.cast<bool>();
    } else if (key == "warm_start") {
      if (!v.is_none()) o.warm_start = v.cast<NlsqSummary>();
    } else {
      ApplyCommon(o, key, v);
    }
  }
  return o;
}

py::dict CmcDict(const CmcSummary& s) {
  py::dict d;
  d["method"] = "cmc";
  d["status"] = std::string(ToString(s.status));
  py::dict physical;
  for (const PosteriorEstimate& p : s.physical) {
    py::dict e;
    e["mean"] = p.mean;
    e["std"] = p.std;
    e["held"] = p.held;
    physical[py::str(p.name)] = e;
  }
  d["parameters"] = physical;
  d["phi_deg"] = s.phi_deg;
  std::vector<double> c, cs, o, os;
  for (const PosteriorEstimate& p : s.contrast) {
    c.push_back(p.mean);
    cs.push_back(p.std);
  }
  for (const PosteriorEstimate& p : s.offset) {
    o.push_back(p.mean);
    os.push_back(p.std);
  }
  d["contrast"] = c;
  d["contrast_std"] = cs;
  d["offset"] = o;
  d["offset_std"] = os;
  d["per_angle_scaling"] = std::string(ToString(s.per_angle_scaling));
  py::list shards;
  for (const CmcShardSummary& x : s.shards) {
    py::dict e;
    e["shard"] = x.shard;
    e["points"] = x.points;
    e["max_rhat"] = x.max_rhat;
    e["min_ess"] = x.min_ess;
    e["divergence_rate"] = x.divergence_rate;
    e["acceptance_rate"] = x.acceptance_rate;
    e["used"] = x.used;
    e["rejection"] = x.rejection;
    shards.append(e);
  }
  d["shards"] = shards;
  d["shards_used"] = s.shards_used;
  d["max_rhat"] = s.max_rhat;
  d["min_ess"] = s.min_ess;
  d["chains"] = s.chains;
  d["warmup"] = s.warmup;
  d["draws"] = s.draws;
  d["warnings"] = s.warnings;
  d["ranks"] = s.ranks;
  d["threads_per_rank"] = s.threads_per_rank;
  d["seconds"] = s.seconds;
  d["report"] = s.FullReport();
  return d;
}

ConfigFitOptions RunOptions(const std::string& file, const std::string& yaml,
                            const std::string& data_file, bool strict,
                            const std::map<std::string, double>& initial, int threads,
                            bool print_progress, const std::string& stop_directory) {
  ConfigFitOptions o = ConfigOptions(file, yaml, data_file, strict);
  o.initial = initial;
  o.threads = threads;
  o.print_progress = print_progress;
  o.stop_on_request = true;
  o.stop_directory = stop_directory;
  return o;
}

}  // namespace

void RegisterFits(py::module_& m) {
  // The NLSQ answer, kept whole for a CMC warm start.
  py::class_<NlsqSummary>(m, "_NlsqSummary").def("to_dict", &NlsqDict);

  m.def(
      "_fit_nlsq_arrays",
      [](const py::object& c2, const DoubleArray& phi, double q, double dt,
         const std::string& source, const py::dict& options, const py::object& comm) {
        NlsqOptions o = ParseNlsqOptions(options);
        o.stop_on_request = true;
        const ArrayData data = ToDataView(c2, ToVector(phi, "phi"), q, dt, source);
        const MPI_Comm c = ToComm(comm);
        return CallInterruptible([&] { return FitNlsq(c, data.view, o); });
      },
      py::arg("c2"), py::arg("phi"), py::arg("q"), py::arg("dt"), py::arg("source"),
      py::arg("options"), py::arg("comm"));
  m.def(
      "_fit_cmc_arrays",
      [](const py::object& c2, const DoubleArray& phi, double q, double dt,
         const std::string& source, const py::dict& options, const py::object& comm) {
        CmcOptions o = ParseCmcOptions(options);
        o.stop_on_request = true;
        const ArrayData data = ToDataView(c2, ToVector(phi, "phi"), q, dt, source);
        const MPI_Comm c = ToComm(comm);
        return CmcDict(CallInterruptible([&] { return FitCmc(c, data.view, o); }));
      },
      py::arg("c2"), py::arg("phi"), py::arg("q"), py::arg("dt"), py::arg("source"),
      py::arg("options"), py::arg("comm"));
  m.def(
      "_fit_nlsq_config",
      [](const std::string& file, const std::string& yaml, const std::string& data_file,
         bool strict, const std::map<std::string, double>& initial, int threads,
         bool print_progress, const std::string& stop_directory, const py::object& comm) {
        const ConfigFitOptions o = RunOptions(file, yaml, data_file, strict, initial, threads,
                                              print_progress, stop_directory);
        const MPI_Comm c = ToComm(comm);
        return CallInterruptible([&] { return FitNlsqConfig(c, o); });
      },
      py::arg("config_file"), py::arg("config_yaml"), py::arg("data_file"), py::arg("strict"),
      py::arg("initial"), py::arg("threads"), py::arg("print_progress"), py::arg("stop_directory"),
      py::arg("comm"));
  m.def(
      "_fit_cmc_config",
      [](const std::string& file, const std::string& yaml, const std::string& data_file,
         bool strict, const std::map<std::string, double>& initial, int threads,
         bool print_progress, const std::string& stop_directory, const py::object& comm) {
        const ConfigFitOptions o = RunOptions(file, yaml, data_file, strict, initial, threads,
                                              print_progress, stop_directory);
        const MPI_Comm c = ToComm(comm);
        NlsqSummary warm;
        const CmcSummary s = CallInterruptible([&] { return FitCmcConfig(c, o, &warm); });
        return py::make_tuple(CmcDict(s), warm);
      },
      py::arg("config_file"), py::arg("config_yaml"), py::arg("data_file"), py::arg("strict"),
      py::arg("initial"), py::arg("threads"), py::arg("print_progress"), py::arg("stop_directory"),
      py::arg("comm"));
  m.def("_rank", [](const py::object& comm) {
    int rank = 0;
    MPI_Comm_rank(ToComm(comm), &rank);
    return rank;
  });
}

}  // namespace homodyne::python
