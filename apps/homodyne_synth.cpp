// `homodyne-synth`: synthetic datasets from the homodyne model.
#include "app/synth_cli.h"

int main(int argc, char** argv) { return homodyne::synth::SynthMain(argc, argv); }
