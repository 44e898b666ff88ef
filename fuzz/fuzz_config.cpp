// libFuzzer target: YAML text -> homodyne config. Any input must either give a Config
// or raise a homodyne::Error; anything else (another exception type, a crash, a
// sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "config/config_reader.h"
#include "core/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  homodyne::config::ReadOptions options;
  options.require_data_file = (size % 2) == 0;  // both modes, chosen by the input
  try {
    const homodyne::config::Config config =
        homodyne::config::ReadConfigString(text, "fuzz.yaml", options);
    // The effective config of an accepted file must be printable and read back.
    const std::string effective = homodyne::config::EffectiveConfigYaml(config);
    homodyne::config::ReadOptions relaxed;
    relaxed.require_data_file = false;
    (void)homodyne::config::ReadConfigString(effective, "effective.yaml", relaxed);
  } catch (const homodyne::Error&) {
    // Rejected with a homodyne error: the expected outcome for bad input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "foreign exception escaped the config reader: %s\n", e.what());
    std::abort();
  }
  return 0;
}
