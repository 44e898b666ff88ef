// Command-line parsing shared by the homodyne tools (private to the library): one place for
// what --help and an invalid command line do, and their exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace homodyne {

// An integer option ≥ `min` (and ≤ INT_MAX). The message says what was expected: CLI11's Range
// says "Value abc not in range" for a word, and its PositiveNumber names DBL_MAX written out.
inline CLI::Validator IntegerAtLeast(int min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        long long value = 0;
        std::size_t used = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "expected an integer, found '" + text + "'";
        if (value < min || value > std::numeric_limits<int>::max()) {
          return "expected an integer >= " + std::to_string(min) + ", found " + text;
        }
        return {};
      },
      "INT>=" + std::to_string(min));
}
// An integer count ≥ 1.
inline CLI::Validator PositiveCount() { return IntegerAtLeast(1); }

// Runs `parse` (the tool's CLI::App::parse call). Returns nullopt when the tool should go
// on, else its exit code: 0 after --help (the help on stdout), 2 (bad input) after an
// invalid command line ("error: <what CLI11 says>" and a pointer to --help on stderr).
// `print` = false prints nothing (MPI ranks other than 0).
std::optional<int> TryParseCommandLine(CLI::App& app, const std::function<void()>& parse,
                                       bool print = true);

}  // namespace homodyne
