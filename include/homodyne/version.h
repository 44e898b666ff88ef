// The version of the homodyne library.
#pragma once

#include <string_view>

namespace homodyne {

// The project version, e.g. "0.1.0" (the same as the installed package's).
std::string_view Version();

}  // namespace homodyne
