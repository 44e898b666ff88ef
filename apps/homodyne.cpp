// `homodyne`: the main fitting application. All logic lives in the library.
#include "app/homodyne_cli.h"

int main(int argc, char** argv) { return homodyne::HomodyneMain(argc, argv); }
