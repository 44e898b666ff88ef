// Owning wrappers of PETSc objects and a checked-call helper (private to src/).
#pragma once

#include <petsctao.h>

#include <string>
#include <utility>

#include "core/errors.h"

namespace homodyne::petsc {

inline void Check(PetscErrorCode code, const char* what) {
  if (code != 0) {
    const char* text = nullptr;
    PetscErrorMessage(code, &text, nullptr);
    ThrowInternal(std::string("PETSc: ") + what + " failed" +
                  (text != nullptr ? std::string(": ") + text : std::string()));
  }
}

// Move-only owner of a PETSc object; the destructor calls the matching XxxDestroy.
template <typename T, PetscErrorCode (*Destroy)(T*)>
class Handle {
 public:
  Handle() = default;
  ~Handle() { Reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : obj_(std::exchange(o.obj_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      Reset();
      obj_ = std::exchange(o.obj_, nullptr);
    }
    return *this;
  }
  T get() const { return obj_; }
  T* out() {
    Reset();
    return &obj_;
  }
  void Reset() noexcept {
    if (obj_ != nullptr) {
      PetscBool finalized = PETSC_FALSE;
      PetscFinalized(&finalized);
      if (!finalized) Destroy(&obj_);  // errors on destruction cannot be reported
      obj_ = nullptr;
    }
  }

 private:
  T obj_ = nullptr;
};

using VecHandle = Handle<Vec, VecDestroy>;
using MatHandle = Handle<Mat, MatDestroy>;
using TaoHandle = Handle<Tao, TaoDestroy>;
using OptionsHandle = Handle<PetscOptions, PetscOptionsDestroy>;

// Makes PETSc return error codes silently (no traceback print) within a scope; our
// code turns them into homodyne::Error.
class QuietErrors {
 public:
  QuietErrors() { PetscPushErrorHandler(PetscReturnErrorHandler, nullptr); }
  ~QuietErrors() { PetscPopErrorHandler(); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;
};

}  // namespace homodyne::petsc
