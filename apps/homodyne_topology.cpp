// `homodyne-topology`: hardware description and recommended MPI layout.
#include "app/topology_cli.h"

int main(int argc, char** argv) { return homodyne::TopologyMain(argc, argv); }
