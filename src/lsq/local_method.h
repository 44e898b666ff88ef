// The local method of a bounded least-squares solve (optimization.nlsq.local_solver).
#pragma once

#include <string_view>

namespace homodyne::lsq {

// kLm: our Levenberg–Marquardt (checkpointable); the others are PETSc/TAO's bounded Newton
// methods, named by their TAO type.
enum class LocalMethod { kLm, kBnls, kBntr, kBntl };

// "lm", "bnls", "bntr", "bntl": the config's names and, for the TAO methods, TAO's types.
std::string_view ToString(LocalMethod method);

}  // namespace homodyne::lsq
