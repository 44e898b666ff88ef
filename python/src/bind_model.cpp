// The model: c2 and its Jacobian for given parameters on a grid (homodyne/model.h).
#include "common.h"

namespace homodyne::python {
namespace {

AnalysisMode ParseMode(const std::string& mode) {
  for (const AnalysisMode m :
       {AnalysisMode::kStatic, AnalysisMode::kLaminarFlow, AnalysisMode::kTwoComponent}) {
    if (AnalysisModeName(m) == mode) return m;
  }
  throw py::value_error("mode: expected 'static', 'laminar_flow' or 'two_component', found '" +
                        mode + "'");
}

// Model evaluations of at least this many points release the GIL (about a millisecond of
// work on one core).
constexpr std::size_t kReleaseGilPoints = 1 << 15;

struct Inputs {
  ModelGrid grid;
  ModelParameters parameters;
};

// The grid and parameters of a call; contrast/offset given as one number apply to every
// angle.
Inputs ReadInputs(const std::string& mode, const DoubleArray& physical, const DoubleArray& phi,
                  double q, double dt, int n_frames, const DoubleArray& contrast,
                  const DoubleArray& offset, double gap) {
  Inputs in;
  in.grid.mode = ParseMode(mode);
  in.grid.q = q;
  in.grid.dt = dt;
  in.grid.n_frames = n_frames;
  in.grid.stator_rotor_gap = gap;
  in.grid.phi_deg = ToVector(phi, "phi");
  in.parameters.physical = ToVector(physical, "parameters");
  const std::size_t k = in.grid.phi_deg.size();
  in.parameters.contrast = ToVector(contrast, "contrast");
  in.parameters.offset = ToVector(offset, "offset");
  if (in.parameters.contrast.size() == 1) in.parameters.contrast.assign(k, contrast.data()[0]);
  if (in.parameters.offset.size() == 1) in.parameters.offset.assign(k, offset.data()[0]);
  return in;
}

py::array_t<double> ModelC2(const std::string& mode, const DoubleArray& physical,
                            const DoubleArray& phi, double q, double dt, int n_frames,
                            const DoubleArray& contrast, const DoubleArray& offset, double gap,
                            bool exact, int threads) {
  const Inputs in = ReadInputs(mode, physical, phi, q, dt, n_frames, contrast, offset, gap);
  const ModelOptions options{.threads = threads, .exact = exact};
  std::vector<std::vector<double>> c2;
  // Releasing and retaking the GIL is only worth it for an evaluation long enough that
  // another Python thread could use the time; a small grid is over in microseconds.
  const auto points = static_cast<std::size_t>(n_frames) * static_cast<std::size_t>(n_frames) *
                      in.grid.phi_deg.size();
  if (points >= kReleaseGilPoints || threads > 1) {
    py::gil_scoped_release release;
    c2 = EvaluateC2(in.grid, in.parameters, options);
  } else {
    c2 = EvaluateC2(in.grid, in.parameters, options);
  }
  if (c2.size() != 1) return ToArray3(c2, n_frames);
  // One angle: the array adopts the library's matrix instead of copying it.
  auto* matrix = new std::vector<double>(std::move(c2.front()));
  const py::capsule owner(matrix, [](void* m) { delete static_cast<std::vector<double>*>(m); });
  const auto n = static_cast<py::ssize_t>(n_frames);
  return py::array_t<double>({py::ssize_t{1}, n, n}, matrix->data(), owner);
}

py::tuple ModelJacobianOf(const std::string& mode, const DoubleArray& physical,
                          const DoubleArray& phi, double q, double dt, int n_frames,
                          const DoubleArray& contrast, const DoubleArray& offset, double gap) {
  const Inputs in = ReadInputs(mode, physical, phi, q, dt, n_frames, contrast, offset, gap);
  ModelJacobian jac;
  {
    py::gil_scoped_release release;
    jac = EvaluateJacobian(in.grid, in.parameters);
  }
  const auto k = static_cast<py::ssize_t>(jac.jacobian.size());
  const auto n = static_cast<py::ssize_t>(n_frames);
  const auto p = static_cast<py::ssize_t>(jac.names.size());
  py::array_t<double> out({k, n, n, p});
  double* dst = out.mutable_data();
  for (const auto& angle : jac.jacobian) dst = std::copy(angle.begin(), angle.end(), dst);
  return py::make_tuple(out, jac.names);
}

}  // namespace

void RegisterModel(py::module_& m) {
  m.def(
      "parameter_names", [](const std::string& mode) { return ParameterNames(ParseMode(mode)); },
      py::arg("mode"), "The physical parameter names of `mode`, in the model's order.");
  const auto doc_grid =
      "mode: 'static', 'laminar_flow' or 'two_component'; parameters: the physical values "
      "(parameter_names(mode)); phi: angles [deg]; q [1/A]; dt [s]; n_frames N (times "
      "dt*[0..N-1], two_component dt*[1..N]); contrast, offset: one per angle or one for all; "
      "stator_rotor_gap [A] (laminar_flow).";
  // Positional: homodyne_hpc.model_c2 (model.py) takes the keywords. pybind11's keyword
  // dispatch copies the keyword dict and looks every name up by a new string, a few
  // microseconds per call, as much as a small evaluation itself.
  m.def("_model_c2", &ModelC2, py::arg("mode"), py::arg("parameters"), py::arg("phi"), py::arg("q"),
        py::arg("dt"), py::arg("n_frames"), py::arg("contrast"), py::arg("offset"),
        py::arg("stator_rotor_gap"), py::arg("exact"), py::arg("threads"),
        (std::string("c2 of every angle as an array (angles, N, N): homodyne_hpc.model_c2. ") +
         doc_grid)
            .c_str());
  m.def("model_jacobian", &ModelJacobianOf, py::arg("mode"), py::arg("parameters"), py::arg("phi"),
        py::kw_only(), py::arg("q"), py::arg("dt"), py::arg("n_frames"), py::arg("contrast") = 1.0,
        py::arg("offset") = 1.0, py::arg("stator_rotor_gap") = 2.0e6,
        (std::string("(jacobian, names): d c2 / d theta as an array (angles, N, N, P) and the "
                     "P parameter names [contrast_k..., offset_k..., physical...]. ") +
         doc_grid)
            .c_str());
}

}  // namespace homodyne::python
