// The `homodyne` command: command-line parsing and the run sequence.
#pragma once

namespace homodyne {

// Entry point of the `homodyne` executable (apps/homodyne.cpp only forwards here).
int HomodyneMain(int argc, char** argv);

}  // namespace homodyne
