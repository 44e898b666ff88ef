// `homodyne-config`: configuration templates and validation. All logic is in the library.
#include "app/config_tool.h"

int main(int argc, char** argv) { return homodyne::config::HomodyneConfigMain(argc, argv); }
