// Wall-clock time stamps for result files and reports.
#pragma once

#include <string>

namespace homodyne {

// Current UTC time as ISO-8601 ("2026-11-22T05:40:00Z").
std::string IsoTimestampNow();

// Seconds since this process started (the kernel's start time of the process, in clock ticks:
// 10 ms resolution), so that a run's report accounts for the time before main() too
// (exec, dynamic loading). NaN where /proc is not readable.
double SecondsSinceProcessStart();

}  // namespace homodyne
