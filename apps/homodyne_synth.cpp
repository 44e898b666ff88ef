// `homodyne-synth`: synthetic datasets from the homodyne model.
#include "homodyne/synth/synthetic_dataset.h"

int main(int argc, char** argv) { return homodyne::synth::SynthMain(argc, argv); }
