// Wall-clock time stamps for result files and reports.
#pragma once

#include <string>

namespace homodyne {

// Current UTC time as ISO-8601 ("2026-11-22T05:40:00Z").
std::string IsoTimestampNow();

}  // namespace homodyne
