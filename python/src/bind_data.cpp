// Data: an APS file's matrices, chosen by a config's selection rules or by arguments
// (homodyne/data.h, homodyne/config_fit.h), as numpy arrays and metadata.
#include "common.h"

namespace homodyne::python {

py::dict DataDict(const XpcsData& data) {
  py::dict d;
  const int n = data.n_frames();
  d["c2"] = ToArray3(data.c2, n);
  d["phi_deg"] =
      py::array_t<double>(static_cast<py::ssize_t>(data.phi_deg.size()), data.phi_deg.data());
  d["q"] = data.q;
  d["dt"] = data.dt;
  d["n_frames"] = n;
  d["source"] = data.source;
  return d;
}

ConfigFitOptions ConfigOptions(const std::string& file, const std::string& yaml,
                               const std::string& data_file, bool strict) {
  ConfigFitOptions o;
  o.config_file = file;
  o.config_yaml = yaml;
  o.data_file = data_file;
  o.strict = strict;
  return o;
}

void RegisterData(py::module_& m) {
  m.def(
      "_load_config_data",
      [](const std::string& file, const std::string& yaml, const std::string& data_file,
         bool strict) {
        const ConfigFitOptions o = ConfigOptions(file, yaml, data_file, strict);
        XpcsData data;
        std::string mode;
        {
          py::gil_scoped_release release;
          data = LoadConfigData(o);
          mode = AnalysisModeName(ConfigAnalysisMode(o));
        }
        py::dict d = DataDict(data);
        d["analysis_mode"] = mode;
        return d;
      },
      py::arg("config_file"), py::arg("config_yaml"), py::arg("data_file"), py::arg("strict"));
  m.def(
      "_load_aps",
      [](const std::string& file, double q, double dt, int start_frame, int end_frame,
         double q_tolerance_fraction, const std::vector<std::pair<double, double>>& phi_ranges) {
        DataSelection s;
        s.file = file;
        s.q = q;
        s.dt = dt;
        s.start_frame = start_frame;
        s.end_frame = end_frame;
        s.q_tolerance_fraction = q_tolerance_fraction;
        s.phi_ranges = phi_ranges;
        XpcsData data;
        {
          py::gil_scoped_release release;
          data = LoadXpcsData(s);
        }
        return DataDict(data);
      },
      py::arg("file"), py::arg("q"), py::arg("dt"), py::arg("start_frame"), py::arg("end_frame"),
      py::arg("q_tolerance_fraction"), py::arg("phi_ranges"));
}

}  // namespace homodyne::python
