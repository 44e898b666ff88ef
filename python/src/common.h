// What the parts of the homodyne_hpc module share: array conversions, the MPI session, the
// interruptible call with the GIL released.
#pragma once

#include <mpi.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "homodyne/homodyne.h"

namespace homodyne::python {

namespace py = pybind11;

// A C-contiguous float64 view of `obj`: the caller's buffer itself when it already is one,
// else a converted copy (forcecast).
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

// The values of a 1-D float64 array (a small copy: parameters, angles).
std::vector<double> ToVector(const DoubleArray& a, const char* name);

// Matrices [k][i·N + j] as one new (K, N, N) array.
py::array_t<double> ToArray3(const std::vector<std::vector<double>>& m, int n);

// (K, N, N) array → the library's view of it. A C-contiguous float64 array is used in
// place; another (other dtype, strides) is converted once into a new array, which `array`
// keeps alive. The array must not change while a fit reads it.
struct ArrayData {
  DoubleArray array;
  XpcsDataView view;
};
ArrayData ToDataView(const py::handle& c2, const std::vector<double>& phi_deg, double q, double dt,
                     const std::string& source);

// MPI (and PETSc, HDF5) for the fits: started on the first call in this process, by
// homodyne::Session's interpreter constructor (which uses an MPI mpi4py started).
void EnsureSession();
// The communicator of a `comm` argument: None → MPI_COMM_WORLD; an mpi4py communicator →
// its MPI_Comm.
MPI_Comm ToComm(const py::object& comm);

// Runs `call` with the GIL released. While it runs, SIGINT (when this is the main thread)
// asks the library to stop (homodyne::RequestStop); afterwards Python's handler is back and
// an interrupted call raises KeyboardInterrupt, also when the call ended on its own first.
bool InstallSigintHandler();
void RestoreSigintHandler();
bool SigintReceived();

template <typename Fn>
auto CallInterruptible(Fn&& call) -> decltype(call()) {
  const bool installed = InstallSigintHandler();
  std::exception_ptr failure;
  using Result = decltype(call());
  std::optional<Result> result;
  {
    py::gil_scoped_release release;
    try {
      result.emplace(call());
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (installed) RestoreSigintHandler();
  if (installed && SigintReceived()) {
    homodyne::ClearStopRequest();
    std::string why = "the fit was stopped by SIGINT";
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const homodyne::Error& e) {
        why += std::string(": ") + e.message();
      } catch (...) {
      }
    }
    PyErr_SetString(PyExc_KeyboardInterrupt, why.c_str());
    throw py::error_already_set();
  }
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

py::dict DataDict(const XpcsData& data);
ConfigFitOptions ConfigOptions(const std::string& file, const std::string& yaml,
                               const std::string& data_file, bool strict);

void RegisterErrors(py::module_& m);
void RegisterModel(py::module_& m);
void RegisterData(py::module_& m);
void RegisterFits(py::module_& m);

}  // namespace homodyne::python
