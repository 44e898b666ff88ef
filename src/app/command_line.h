// Command-line parsing shared by the homodyne tools (private to the library): one place for
// what --help and an invalid command line do, and their exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <limits>
#include <optional>

namespace homodyne {

// An integer count ≥ 1 (CLI11's PositiveNumber names its upper limit as DBL_MAX written out).
inline CLI::Range PositiveCount() { return CLI::Range(1, std::numeric_limits<int>::max()); }

// Runs `parse` (the tool's CLI::App::parse call). Returns nullopt when the tool should go
// on, else its exit code: 0 after --help (the help on stdout), 2 (bad input) after an
// invalid command line ("error: <what CLI11 says>" and a pointer to --help on stderr).
// `print` = false prints nothing (MPI ranks other than 0).
std::optional<int> TryParseCommandLine(CLI::App& app, const std::function<void()>& parse,
                                       bool print = true);

}  // namespace homodyne
