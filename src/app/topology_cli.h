// Entry point of the `homodyne-topology` executable (src/app/topology_cli.cpp).
#pragma once

namespace homodyne {

int TopologyMain(int argc, char** argv);

}  // namespace homodyne
