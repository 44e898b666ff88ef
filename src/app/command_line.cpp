#include "app/command_line.h"

#include <cstdio>

#include "core/errors.h"

namespace homodyne {

std::optional<int> TryParseCommandLine(CLI::App& app, const std::function<void()>& parse,
                                       bool print) {
  try {
    parse();
    return std::nullopt;
  } catch (const CLI::Success& e) {  // --help (CLI11 reports it as an exception)
    if (print) app.exit(e);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (print) {
      std::fprintf(stderr, "error: %s\nRun with --help for the list of options.\n", e.what());
    }
    return static_cast<int>(ExitCode::kBadInput);
  }
}

}  // namespace homodyne
