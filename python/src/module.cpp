// The compiled part of the homodyne_hpc package (homodyne_hpc/__init__.py re-exports it).
#include "common.h"

#include <csignal>
#include <optional>

namespace homodyne::python {
namespace {

volatile std::sig_atomic_t g_sigint = 0;
struct sigaction g_previous {};

extern "C" void OnSigint(int) {
  g_sigint = 1;
  homodyne::RequestStop();
}

std::optional<Session> g_session;

}  // namespace

bool InstallSigintHandler() {
  // Python delivers signals to its main thread only; another thread leaves them alone.
  if (PyGILState_Check() == 0 || py::module_::import("threading").attr("current_thread")().ptr() !=
                                     py::module_::import("threading").attr("main_thread")().ptr()) {
    return false;
  }
  g_sigint = 0;
  homodyne::ClearStopRequest();
  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  return sigaction(SIGINT, &sa, &g_previous) == 0;
}

void RestoreSigintHandler() { sigaction(SIGINT, &g_previous, nullptr); }
bool SigintReceived() { return g_sigint != 0; }

std::vector<double> ToVector(const DoubleArray& a, const char* name) {
  if (a.ndim() > 1) {
    throw py::value_error(std::string(name) + ": expected a 1-D array, found " +
                          std::to_string(a.ndim()) + " dimensions");
  }
  return {a.data(), a.data() + a.size()};
}

py::array_t<double> ToArray3(const std::vector<std::vector<double>>& m, int n) {
  const auto k = static_cast<py::ssize_t>(m.size());
  py::array_t<double> out({k, static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(n)});
  double* dst = out.mutable_data();
  for (const auto& matrix : m) dst = std::copy(matrix.begin(), matrix.end(), dst);
  return out;
}

ArrayData ToDataView(const py::handle& c2_obj, const std::vector<double>& phi_deg, double q,
                     double dt, const std::string& source) {
  ArrayData d{DoubleArray::ensure(c2_obj), {}};
  const DoubleArray& c2 = d.array;
  if (!c2) throw py::type_error("c2: expected an array of numbers");
  if (c2.ndim() != 3 || c2.shape(1) != c2.shape(2)) {
    throw py::value_error("c2: expected shape (angles, N, N)");
  }
  XpcsDataView& v = d.view;
  v.source = source;
  v.q = q;
  v.dt = dt;
  v.phi_deg = phi_deg;
  v.n_frames = static_cast<int>(c2.shape(1));
  for (py::ssize_t k = 0; k < c2.shape(0); ++k) v.c2.push_back(c2.data(k, 0, 0));
  return d;
}

void EnsureSession() {
  if (g_session) return;
  g_session.emplace();
  // Ended before the interpreter (and mpi4py's MPI_Finalize, an exit hook that runs after
  // the atexit functions) goes away.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { g_session.reset(); }));
}

MPI_Comm ToComm(const py::object& comm) {
  EnsureSession();
  if (comm.is_none()) return MPI_COMM_WORLD;
  // mpi4py's Comm: its C handle through the documented _handle / py2f conversion.
  if (!py::hasattr(comm, "py2f")) {
    throw py::type_error("comm: expected an mpi4py communicator (e.g. MPI.COMM_WORLD) or None");
  }
  const auto fortran = comm.attr("py2f")().cast<MPI_Fint>();
  return MPI_Comm_f2c(fortran);
}

}  // namespace homodyne::python

PYBIND11_MODULE(_core, m) {
  using namespace homodyne::python;
  m.doc() = "homodyne-hpc's C++ library (the public API of include/homodyne)";
  m.attr("__version__") = std::string(homodyne::Version());
  RegisterErrors(m);
  RegisterModel(m);
  RegisterData(m);
  RegisterFits(m);
}
