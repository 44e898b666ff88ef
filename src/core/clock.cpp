#include "core/clock.h"

#include <unistd.h>

#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace homodyne {

std::string IsoTimestampNow() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

double SecondsSinceProcessStart() {
  // Field 22 of /proc/self/stat is the start time in ticks after boot; /proc/uptime is the
  // time since boot. The command name (field 2) may hold spaces: skip past its ')'.
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return std::nan("");
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nan("");
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  unsigned long long start_ticks = 0;
  // Fields 3..21 come before the start time.
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) start_ticks = std::stoull(field);
  }
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0.0;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (!(uptime_file >> uptime) || start_ticks == 0 || ticks <= 0) return std::nan("");
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(ticks);
}

}  // namespace homodyne
