#include "config/key_paths.h"

#include <fmt/format.h>

#include "config/key_table.h"
#include "core/errors.h"

namespace homodyne::config::keys {

namespace {

std::string Known(std::string path) {
  HOMODYNE_CHECK(ResolveKeySpec(path) != nullptr || FindKeySpec(path) != nullptr,
                 fmt::format("'{}' is not a key of the key table", path));
  return path;
}

}  // namespace

std::string Key(std::string_view section, std::string_view leaf) {
  return Known(fmt::format("{}.{}", section, leaf));
}

std::string KeyPair(std::string_view section, std::string_view a, std::string_view b) {
  Known(fmt::format("{}.{}", section, a));
  Known(fmt::format("{}.{}", section, b));
  return fmt::format("{}.{}/{}", section, a, b);
}

std::string FrameWindowKey() { return KeyPair(kAnalyzerParameters, "start_frame", "end_frame"); }

}  // namespace homodyne::config::keys
