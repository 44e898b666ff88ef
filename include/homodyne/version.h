// The version of the homodyne library.
#pragma once

#include <string_view>

#include "homodyne/export.h"

namespace homodyne {

// The project version, e.g. "0.1.0" (the same as the installed package's).
HOMODYNE_API std::string_view Version();

}  // namespace homodyne
