// Access to the process Environment inside benchmark binaries.
#pragma once

#include "runtime/environment.h"

namespace homodyne::bench {
Environment& BenchEnvironment();
}  // namespace homodyne::bench
