// homodyne::Error → the exception classes of homodyne_hpc/errors.py (one per ErrorKind),
// carrying the library's message and its context.
#include "common.h"

namespace homodyne::python {
namespace {

const char* ClassOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput:
      return "BadInputError";
    case ErrorKind::kIo:
      return "FileError";
    case ErrorKind::kNumerical:
      return "NumericalError";
    case ErrorKind::kCheckpointed:
      return "StoppedError";
    case ErrorKind::kInternal:
      break;
  }
  return "InternalError";
}

}  // namespace

void RegisterErrors(py::module_& m) {
  (void)m;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      const py::object cls = py::module_::import("homodyne_hpc.errors").attr(ClassOf(e.kind()));
      const ErrorContext& c = e.context();
      const py::object value =
          cls(e.what(), std::string(ToString(e.kind())), e.message(), c.file, c.key, c.rank);
      PyErr_SetObject(cls.ptr(), value.ptr());
    }
  });
}

}  // namespace homodyne::python
