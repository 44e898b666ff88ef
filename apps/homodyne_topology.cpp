// `homodyne-topology`: hardware description and recommended MPI layout.
#include "homodyne/topology_report.h"

int main(int argc, char** argv) { return homodyne::TopologyMain(argc, argv); }
