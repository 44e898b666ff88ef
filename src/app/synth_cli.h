// The `homodyne-synth` executable: synthetic datasets from the homodyne model.
#pragma once

namespace homodyne::synth {

// Entry point of `homodyne-synth`. Exit codes as docs/errors.md lists them.
int SynthMain(int argc, char** argv);

}  // namespace homodyne::synth
